-- drain: remove up to `limit` waiting jobs (pending, then delayed when asked); leased jobs stay.
-- One page per call: the caller calls again until a call finds fewer than `limit` entries.
--! keys: pending data dataBuckets meta callerIds delayed leased leaseHolders dead progress addedTimes jobLogs
--! argv: limit with_delayed
-- with_delayed: 1 = delayed jobs too.
-- Returns: { jobs removed, entries looked at (pending entries incl. cancelled ones, delayed) }.
local limit, with_delayed = tonumber(ARGV[1]), ARGV[2] == '1'
local removed, seen = 0, 0
local function remove(seqs)
  local metas = hmget(K_META, seqs)
  local datas = data_mget(seqs)
  for i, seq in ipairs(seqs) do
    if datas[i] then
      destroy(seq, decode_meta(metas[i]))
      removed = removed + 1
    end
  end
  seen = seen + #seqs
end
for p = 0, 9 do
  if seen >= limit then
    break
  end
  local got = rcall('LPOP', pending_key(p), limit - seen)
  if got then
    remove(got)
  end
end
if with_delayed and seen < limit then
  local got = rcall('ZRANGE', K_DELAYED, 0, limit - seen - 1)
  if #got > 0 then
    remove(got)
  end
end
return { removed, seen }
