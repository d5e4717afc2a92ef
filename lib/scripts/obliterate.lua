-- obliterate: remove the queue's keys, at most `limit` elements per call (a big hash, list or
-- set shrinks by a page per call; DEL only once it is small). The caller calls again until a
-- call removes fewer than `limit`, then deletes the per-worker and per-producer keys (SCAN).
-- The counters of job ids, lease tokens and worker ids stay: a lease or a worker from before
-- (a forced obliterate, a lease in a caller's hands) must never match a job or worker after.
--! keys: pending data dataBuckets meta callerIds delayed leased leaseHolders dead workers wake results resultExpiries progress parked reclaimedWorkers heartbeatRecord keptCallerIds flowControl rateLog completedJobs completedInfo workerInfo addedTimes
--! keys: groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
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
  K_KEPT_CALLER_IDS, K_RATE_LOG, K_WAKE, K_PARKED, K_RECLAIMED_WORKERS, K_WORKERS, K_HEARTBEAT_RECORD, K_FLOW_CONTROL,
  K_COMPLETED_JOBS, K_COMPLETED_INFO, K_WORKER_INFO,
  K_GROUPS_READY, K_GROUP_TURN_COUNTER, K_GROUP_RUNNING, K_GROUP_LIMITS, K_GROUPS_LIMITED, K_GROUPS_PAUSED, K_GROUPED_PENDING }
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
-- Each listed group's pending jobs and rate log (a big group shrinks by a page per call); the
-- group leaves the list with them (K_GROUPS itself goes last, below).
while budget > 0 do
  local g = rcall('ZRANGE', K_GROUPS, 0, 0)[1]
  if not g then
    break
  end
  local size = rcall('ZCARD', group_key(g))
  if size > budget then
    rcall('ZREMRANGEBYRANK', group_key(g), 0, budget - 1)
    budget = 0
  else
    rcall('DEL', group_key(g), group_rate_key(g))
    rcall('ZREM', K_GROUPS, g)
    budget = budget - math.max(1, size)
  end
end
keys[#keys + 1] = K_GROUPS
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
