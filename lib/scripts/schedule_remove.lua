-- schedule_remove: a schedule stops: its record goes, and so do its tick jobs that have not fired
-- (still in the delayed set). Jobs of ticks that fired already run to their end.
--! keys: sched schedData schedDue schedIds schedRun data dataBuckets meta ids delayed
-- ARGV: schedule id.
-- Returns: 1 removed, 0 no such schedule.
local sid = ARGV[1]
local rec = sched_record(sid)
if not rec then
  return 0
end
drop_unfired(sid, rec)
rcall('HDEL', K_SCHED_RUN, sid)
rcall('HDEL', K_SCHED, sid)
rcall('HDEL', K_SCHED_DATA, sid)
rcall('ZREM', K_SCHED_DUE, sid)
rcall('ZREM', K_SCHED_IDS, sid)
return 1
