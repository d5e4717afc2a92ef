-- counts: sizes of every state, cheap enough for health checks (O(1) per key).
--! keys: pending delayed leased dead workers groupedPending waitingChildren completedJobs data
--! argv: heartbeat_timeout_ms live_up_to
-- live_up_to ('' or 0: none; whenIdle's read, nestjs-work-queue/testing): when nothing is
-- delayed, leased or waiting for children and the pending lists hold at most this many entries,
-- the entries cancelled or replaced jobs left there (a lease drops them) are not counted.
-- Returns: { p0..p9 lengths (grouped pending jobs included), delayed, leased, dead, live
--   workers, Redis time ms, kept completed, waiting for children }.
local now = now_ms()
local out, lens = {}, {}
local grouped = rcall('HMGET', K_GROUPED_PENDING, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
local listed = 0
for p = 0, 9 do
  lens[p] = rcall('LLEN', pending_key(p))
  listed = listed + lens[p]
  out[#out + 1] = lens[p] + (tonumber(grouped[p + 1]) or 0)
end
out[#out + 1] = rcall('ZCARD', K_DELAYED)
out[#out + 1] = leased_count()
out[#out + 1] = rcall('ZCARD', K_DEAD)
out[#out + 1] = rcall('ZCOUNT', K_WORKERS, now - tonumber(ARGV[1]), '+inf')
out[#out + 1] = now
out[#out + 1] = rcall('ZCARD', K_COMPLETED_JOBS)
out[#out + 1] = rcall('ZCARD', K_WAITING_CHILDREN)
local up_to = tonumber(ARGV[2]) or 0
if listed > 0 and listed <= up_to and out[11] + out[12] + out[17] == 0 then
  for p = 0, 9 do
    if lens[p] > 0 then
      for _, seq in ipairs(rcall('LRANGE', pending_key(p), 0, -1)) do
        if not data_has(seq) then
          out[p + 1] = out[p + 1] - 1
        end
      end
    end
  end
end
return out
