-- schedule_remove: a schedule stops: its record goes, and so do its tick jobs that have not fired
-- (still in the delayed set), logged 'cancelled' (one entry). Jobs of ticks that fired already
-- run to their end.
--! keys: schedules schedulePayloads schedulesDue scheduleIds scheduleLatestJobs data dataBuckets meta callerIds delayed addedTimes eventLog
--! argv: schedule_id
-- Returns: 1 removed, 0 no such schedule.
local sid = ARGV[1]
local rec = sched_record(sid)
if not rec then
  return 0
end
drop_unfired(sid, rec)
rcall('HDEL', K_SCHEDULE_LATEST_JOBS, sid)
rcall('HDEL', K_SCHEDULES, sid)
rcall('HDEL', K_SCHEDULE_PAYLOADS, sid)
rcall('ZREM', K_SCHEDULES_DUE, sid)
rcall('ZREM', K_SCHEDULE_IDS, sid)
return 1
