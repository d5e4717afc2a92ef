-- list_jobs: one page of the jobs in one state, in the order the queue takes them. O(page).
--! keys: pending data meta delayed leased dead progress
--! argv: state:pending|delayed|leased|dead offset limit
-- Pending: the lists p0..p9 one after the other (lease order); positions count stored entries,
-- and the entry a cancelled job leaves until a lease drops it is skipped (the page is then
-- shorter). Delayed by due time, leased by deadline, dead by time of death (oldest first).
-- Returns: flat, per job: seq, payload, meta, score (due / deadline / died ms, '' for pending),
--   progress ('' = none).
local state, offset, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local ids, scores = {}, {}
if state == 'pending' then
  for p = 0, 9 do
    if #ids >= limit then
      break
    end
    local len = rcall('LLEN', pending_key(p))
    if offset >= len then
      offset = offset - len
    else
      local got = rcall('LRANGE', pending_key(p), offset, offset + limit - #ids - 1)
      offset = 0
      for _, n in ipairs(got) do
        ids[#ids + 1] = n
        scores[#ids] = ''
      end
    end
  end
else
  local key = ({ delayed = K_DELAYED, leased = K_LEASED, dead = K_DEAD })[state]
  local got = rcall('ZRANGE', key, offset, offset + limit - 1, 'WITHSCORES')
  for i = 1, #got, 2 do
    ids[#ids + 1] = got[i]
    scores[#ids] = got[i + 1]
  end
end
local out = {}
if #ids == 0 then
  return out
end
local d, m, g = data_mget(ids), hmget(K_META, ids), hmget(K_PROGRESS, ids)
for i, n in ipairs(ids) do
  if d[i] then
    out[#out + 1] = n
    out[#out + 1] = d[i]
    out[#out + 1] = m[i] or ''
    out[#out + 1] = scores[i]
    out[#out + 1] = g[i] or ''
  end
end
return out
