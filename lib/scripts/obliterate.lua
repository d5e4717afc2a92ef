-- obliterate: remove the queue's keys, at most `limit` elements per call (a big hash, list or
-- set shrinks by a page per call; DEL only once it is small). The caller calls again until a
-- call removes fewer than `limit`, then deletes the per-worker and per-producer keys (SCAN).
--! keys: pending seqCounter tokenCounter data dataBuckets meta callerIds delayed leased leaseHolders dead workers wake results resultExpiries progress workerIdCounter parked heartbeatRecord keptCallerIds flowControl rateLog completedJobs completedInfo workerInfo addedTimes
--! argv: force heartbeat_timeout_ms limit
-- force: 1 = even with live workers.
-- Returns: { -1, live workers } when refused, else { 0, elements removed }.
local force, hb, limit = ARGV[1] == '1', tonumber(ARGV[2]), tonumber(ARGV[3])
if not force then
  local live = rcall('ZCOUNT', K_WORKERS, now_ms() - hb, '+inf')
  if live > 0 then
    return { -1, live }
  end
end
local keys = { K_META, K_CALLER_IDS, K_DELAYED, K_LEASED, K_LEASE_HOLDERS, K_DEAD, K_RESULTS, K_RESULT_EXPIRIES, K_PROGRESS,
  K_KEPT_CALLER_IDS, K_RATE_LOG, K_WAKE, K_PARKED, K_WORKERS, K_HEARTBEAT_RECORD, K_FLOW_CONTROL, K_SEQ_COUNTER, K_TOKEN_COUNTER, K_WORKER_ID_COUNTER,
  K_COMPLETED_JOBS, K_COMPLETED_INFO, K_WORKER_INFO }
for p = 0, 9 do
  keys[#keys + 1] = pending_key(p)
end
local SIZE = { list = 'LLEN', zset = 'ZCARD', hash = 'HLEN', set = 'SCARD' }
local budget = limit
-- Payload buckets first, whole (at most DATA_SPAN payloads each); the set goes with its last.
while budget > 0 do
  local b = rcall('SPOP', K_DATA_BUCKETS)
  if not b then
    break
  end
  local key = K_DATA .. ':' .. b
  budget = budget - math.max(1, rcall('HLEN', key))
  rcall('DEL', key, K_ADDED_TIMES .. ':' .. b)
end
for _, key in ipairs(keys) do
  if budget <= 0 then
    break
  end
  local t = rcall('TYPE', key).ok
  if t ~= 'none' then
    local size = SIZE[t] and rcall(SIZE[t], key) or 1
    if size <= budget then
      rcall('DEL', key)
      budget = budget - size
    else
      if t == 'list' then
        rcall('LTRIM', key, budget, -1)
      elseif t == 'zset' then
        rcall('ZREMRANGEBYRANK', key, 0, budget - 1)
      elseif t == 'set' then
        rcall('SPOP', key, budget)
      else
        local cursor, fields = '0', {}
        repeat
          local r = rcall('HSCAN', key, cursor, 'COUNT', budget)
          cursor = r[1]
          for i = 1, #r[2], 2 do
            fields[#fields + 1] = r[2][i]
          end
        until #fields > 0 or cursor == '0'
        rcall_each('HDEL', key, fields)
      end
      budget = 0
    end
  end
end
return { 0, limit - budget }
