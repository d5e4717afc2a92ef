-- complete: finish a batch of jobs, then (optionally) lease more in the same call.
-- KEYS: the common layout; KEYS[28] is the worker's lease set.
-- ARGV: worker id, result ttl ms (0 = results off), count, then per job: id, token, result;
--   then lease count (0 = none), lease ms, park ms (0 = do not mark the worker parked),
--   adopt count, then per adopted job: id, token.
-- Adopting comes first: the worker takes over leases handed off to it (see add.lua) that it
-- popped from the wake list, so a complete of such a job in the same call is its own.
-- A job completes when it still exists, whoever holds it now (a stale holder saves the work);
-- the current holder, if another, is told on the event channel.
-- Returns: { now, deadline, next due (as in lease.lua), then per completed job 1|0, then per
--   adopted job 1|0 (0: cancelled or reclaimed meanwhile), then per leased job: id, token,
--   payload, meta }.
local wid = ARGV[1]
local ttl = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
local now = now_ms()
local o = 4 + count * 3
local lease_count, lease_ms, park_ms = tonumber(ARGV[o]), tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
local adopt_count = tonumber(ARGV[o + 3])
local adopted = {}
for j = 1, adopt_count do
  local n, token = ARGV[o + 2 + j * 2], ARGV[o + 3 + j * 2]
  adopted[j] = 0
  if rcall('HGET', K_TOKENS, n) == token .. ':h' then
    rcall('HSET', K_TOKENS, n, token .. ':' .. wid)
    rcall('ZADD', K_LEASED, now + lease_ms, n)
    rcall('SADD', K_WLEASES, n)
    adopted[j] = 1
  end
end
local ids = {}
for j = 0, count - 1 do
  ids[j + 1] = ARGV[4 + j * 3]
end
local tokens, metas = {}, {}
if count > 0 then
  tokens = hmget(K_TOKENS, ids)
  metas = hmget(K_META, ids)
end
local mine = {}
local results = {}
local done = {}
for j = 1, count do
  local n = ids[j]
  local token = ARGV[5 + (j - 1) * 3]
  local meta = nil
  local ok = 0
  if tokens[j] == token .. ':' .. wid then
    mine[#mine + 1] = n
    ok = 1
    if metas[j] then
      meta = decode_meta(metas[j])
      if meta.i and rcall('HGET', K_IDS, meta.i) == n then
        rcall('HDEL', K_IDS, meta.i)
      end
    end
  elseif rcall('HEXISTS', K_DATA, n) == 1 then
    meta = decode_meta(metas[j])
    destroy(n, meta)
    ok = 1
    if tokens[j] then
      rcall('PUBLISH', K_EV, 'l:' .. n)
    end
  end
  if ok == 1 and ttl > 0 then
    local pid = n
    if meta and meta.i then
      pid = meta.i
    end
    results[#results + 1] = pid
    results[#results + 1] = ARGV[6 + (j - 1) * 3]
  end
  done[j] = ok
end
if #mine > 0 then
  rcall_each('HDEL', K_DATA, mine)
  rcall_each('HDEL', K_META, mine)
  rcall_each('HDEL', K_TOKENS, mine)
  rcall_each('HDEL', K_PROG, mine)
  rcall_each('ZREM', K_LEASED, mine)
end
if wid ~= '0' and count > 0 then
  rcall_each('SREM', K_WLEASES, ids)
end
if #results > 0 then
  rcall_each('HSET', K_RES, results)
  local z = {}
  for r = 1, #results, 2 do
    z[#z + 1] = now + ttl
    z[#z + 1] = results[r]
  end
  rcall_each('ZADD', K_REXP, z)
end
local out = { now, now + lease_ms, 0 }
for j = 1, count do
  out[#out + 1] = done[j]
end
for j = 1, adopt_count do
  out[#out + 1] = adopted[j]
end
-- The next due time matters only to a worker left with free slots.
if lease_count > 0 and lease_jobs(lease_count, lease_ms, wid, now, out, park_ms) < lease_count then
  out[3] = next_due()
end
return out
