-- fail: count a failed attempt of a leased job; retry it after a delay or dead-letter it.
--! keys: pending data dataBuckets meta callerIds delayed leased leaseHolders dead wake progress workerLeases eventLog waitingChildren flowParent flowOutbox flowOutboxAt flowCancels addedTimes jobLogs metricsCompleted metricsFailed metricsDead
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: seq token worker_id error mode:retry|dead retry_delay_ms default_max_attempts max_dead
--! argv: reason max_log_lines logs own
-- error: the error message; reason: the dead-letter reason when mode is dead ('' = the error);
-- logs: the attempt's last log lines (logs_apply, lib/scripts/lib/history.lua), '' = none;
-- own: '1' from a Worker (see below; a fail by hand of a lease that failed already is 'lost').
-- Returns: { 1 retried | 2 dead-lettered, Redis now }, or E_LEASE_LOST when the caller does not
--   hold the lease (nothing changed). From a Worker, a re-send of a fail that ran (its reply
--   was lost: ioredis sends it again after a reconnect) answers what it did and does nothing
--   again: the job's meta keeps the tokens of its last leases that ended this way and their
--   answers (f, lib/scripts/lib/meta.lua).
local seq, token, wid, err, mode = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local delay, max_default, max_dead = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
if rcall('HGET', K_LEASE_HOLDERS, seq) ~= token .. ':' .. wid then
  local ended = ARGV[12] == '1' and ended_run(decode_meta(rcall('HGET', K_META, seq)), token)
  if ended then
    return { ended == '1' and 1 or 2, now_ms() }
  end
  return E_LEASE_LOST
end
local now = now_ms()
local meta = decode_meta(rcall('HGET', K_META, seq))
meta.a = (meta.a or 0) + 1
meta.e = err
-- It ran to an error without killing its worker: no longer a suspect.
meta.s = nil
meta.k = wid -- processedBy
logs_apply(ARGV[11], tonumber(ARGV[10]), function()
  return meta
end)
rcall('ZREM', K_LEASED, seq)
rcall('HDEL', K_LEASE_HOLDERS, seq)
lease_unpad()
if wid ~= '0' then
  rcall('SREM', K_WORKER_LEASES, seq)
end
if meta.g then
  group_run_ended(meta.g, now)
end
local retried = not (mode == 'dead' or meta.a >= (meta.m or max_default))
end_run(meta, token, retried and '1' or '2')
emit('failed', meta.i or seq, 'a', meta.a, 'r', retried and '1' or '0', 'err', ev_text(err), attempt_fields(seq, wid, meta))
if not retried then
  local reason = ARGV[9]
  if reason == '' then
    reason = err
  end
  to_dead(seq, meta, reason, now, max_dead)
  metrics_flush(now)
  return { 2, now }
end
metric_add('failed', 1)
metrics_flush(now)
save_meta(seq, meta)
if delay > 0 then
  schedule({ now + delay, seq })
else
  requeue(seq, meta, false)
  wake()
end
return { 1, now }
