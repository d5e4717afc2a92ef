-- clean: promote due delayed jobs, reclaim expired leases to the FRONT (see expire_lease),
-- drop expired results and caller ids kept past their dedupe window, trim the kept completed
-- jobs (keepCompleted: by age, or by count when it was lowered), and report workers whose
-- heartbeat lapsed (reclaimed one by one with reclaim_worker) and schedules due for their next
-- ticks (made one by one with schedule_make_ticks: cron times come from the client).
-- Cost is proportional to the work found: every step reads only due/expired entries.
--! keys: pending data dataBuckets meta callerIds delayed leased leaseHolders dead workers reclaimedWorkers wake results resultExpiries progress heartbeatRecord keptCallerIds schedulesDue scheduleLatestJobs eventLog waitingChildren flowParent flowOutbox flowOutboxAt flowCancels flowRechecks flowReserved addedTimes jobLogs metricsCompleted metricsFailed metricsDead completedInfo completedJobs
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: limit max_lease_expiries max_dead heartbeat_timeout_ms keep_count keep_age_ms batch
-- limit: the most entries each step takes; keep_count, keep_age_ms: keepCompleted (0: none are
-- kept, every kept job goes); batch: the most due schedules, and the most dead workers, reported
-- (the client makes and reclaims them one by one, and calls again while a batch was full).
-- Returns: { promoted, reclaimed, dead-lettered, results dropped, caller ids freed, 1 when flow
--   work is left (flow_due.lua then takes it), Redis now, kept completed jobs trimmed, count s of
--   schedules due, s schedule ids, count d of dead workers, d dead worker ids, then the ids
--   of workers reclaimed while parked whose idle wait may still take wake-ups (reclaim_worker
--   with sweep = 1) }.
local limit, max_exp, max_dead, hb_timeout =
  tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
local promoted = promote(now, limit)
local reclaimed, dead = 0, 0
local scored = rcall('ZRANGEBYSCORE', K_LEASED, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
local expired = {}
for i = 1, #scored, 2 do
  expired[#expired + 1] = { scored[i], tonumber(scored[i + 1]) }
end
-- Earliest deadline first; equal deadlines (one leased batch) in seq order.
sort_by_score_then_id(expired)
-- Walk backwards so the first of them ends up first in line.
for i = #expired, 1, -1 do
  local seq = expired[i][1]
  if not data_has(seq) then
    -- A lease without a payload: nothing to give back.
    rcall('ZREM', K_LEASED, seq)
    rcall('HDEL', K_LEASE_HOLDERS, seq)
    lease_unpad()
  elseif expire_lease(seq, now, max_exp, max_dead, '') then
    reclaimed = reclaimed + 1
  else
    dead = dead + 1
  end
end
if reclaimed > 0 then
  wake()
end
-- Parents a child's failure dead-lettered (flow_parents.lua, which runs without this queue's
-- options) leave the dead-letter set over max_dead until here.
trim_dead(max_dead, limit)
local old = rcall('ZRANGEBYSCORE', K_RESULT_EXPIRIES, '-inf', now, 'LIMIT', 0, limit)
if #old > 0 then
  rcall_each('HDEL', K_RESULTS, old)
  rcall_each('ZREM', K_RESULT_EXPIRIES, old)
end
local freed = rcall('ZRANGEBYSCORE', K_KEPT_CALLER_IDS, '-inf', now, 'LIMIT', 0, limit)
-- An entry of a job that still exists (a dedupe window from its add) just goes: the job holds
-- its id until it completes.
local freed_ids = 0
for _, cid in ipairs(freed) do
  local v = rcall('HGET', K_CALLER_IDS, cid)
  local until_ms = taken_until(v)
  if until_ms and until_ms <= now then
    -- While its job is kept the id still names it (for getJob), free for adds all the same.
    if not kept_of(v) then
      rcall('HDEL', K_CALLER_IDS, cid)
    end
    freed_ids = freed_ids + 1
  end
end
rcall_each('ZREM', K_KEPT_CALLER_IDS, freed)
local trimmed = trim_completed(now, tonumber(ARGV[5]), tonumber(ARGV[6]), limit)
metrics_flush(now)
local batch = ARGV[7]
local due = rcall('ZRANGEBYSCORE', K_SCHEDULES_DUE, '-inf', now, 'LIMIT', 0, batch)
local out = { promoted, reclaimed, dead, #old, freed_ids, flow_work_left(), now, trimmed, #due }
for _, sid in ipairs(due) do
  out[#out + 1] = sid
end
-- (With no worker, nobody to judge: lapsed() would note a silence in a queue that never had one.)
local silent = {}
if rcall('EXISTS', K_WORKERS) == 1 and lapsed(nil, now, hb_timeout) then
  silent = rcall('ZRANGEBYSCORE', K_WORKERS, '-inf', '(' .. (now - hb_timeout), 'LIMIT', 0, batch)
end
out[#out + 1] = #silent
for _, w in ipairs(silent) do
  out[#out + 1] = w
end
-- (ZRANGE and ZREM: the minimal ACL command set has no ZREMRANGEBYSCORE.)
local rw = rcall('ZRANGE', K_RECLAIMED_WORKERS, 0, 99, 'WITHSCORES')
for i = 1, #rw, 2 do
  if tonumber(rw[i + 1]) <= now then
    rcall('ZREM', K_RECLAIMED_WORKERS, rw[i])
  else
    out[#out + 1] = rw[i]
  end
end
return out
