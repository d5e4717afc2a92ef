-- counts: sizes of every state, cheap enough for health checks (O(1) per key).
--! keys: pending delayed leased dead workers groupedPending waitingChildren completedJobs
--! argv: heartbeat_timeout_ms
-- Returns: { p0..p9 lengths (grouped pending jobs included), delayed, leased, dead, live
--   workers, Redis time ms, kept completed, waiting for children }.
local now = now_ms()
local out = {}
local grouped = rcall('HMGET', K_GROUPED_PENDING, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
for p = 0, 9 do
  out[#out + 1] = rcall('LLEN', pending_key(p)) + (tonumber(grouped[p + 1]) or 0)
end
out[#out + 1] = rcall('ZCARD', K_DELAYED)
out[#out + 1] = leased_count()
out[#out + 1] = rcall('ZCARD', K_DEAD)
out[#out + 1] = rcall('ZCOUNT', K_WORKERS, now - tonumber(ARGV[1]), '+inf')
out[#out + 1] = now
out[#out + 1] = rcall('ZCARD', K_COMPLETED_JOBS)
out[#out + 1] = rcall('ZCARD', K_WAITING_CHILDREN)
return out
