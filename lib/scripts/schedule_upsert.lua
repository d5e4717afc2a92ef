-- schedule_upsert: store a schedule (lib/schedules). The same definition, tick meta and payload
-- change nothing at all (safe on every deploy). A changed one drops the tick jobs of the old
-- definition that have not fired, restarts the count and marks the schedule due for its first
-- ticks: the caller makes them next (schedule_make_ticks), or the next clean() does. The tick
-- jobs dropped log 'cancelled' (one entry).
--! keys: schedules schedulePayloads schedulesDue scheduleIds data dataBuckets meta callerIds delayed addedTimes eventLog
--! argv: schedule_id definition payload tick_meta anchor
-- definition, tick_meta: JSON; payload: the template payload; anchor: 'a<ms>' absolute ms,
-- 'd<ms>' Redis now + ms.
-- Returns: 0 unchanged, 1 created, 2 changed.
local sid, def, payload, tmeta, anchor = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local old = sched_record(sid)
if old and old.d == def and old.j == tmeta and rcall('HGET', K_SCHEDULE_PAYLOADS, sid) == payload then
  return 0
end
local now = now_ms()
local rec = { d = def, j = tmeta, v = 1, c = 0, m = {} }
if old then
  -- (A tick whose time came and that no clean or lease promoted yet has not fired, and goes too.
  -- p: lastFireAt of a record an older version wrote, kept.)
  drop_unfired(sid, old)
  rec.p = old.p
  rec.v = (tonumber(old.v) or 0) + 1
end
if string.sub(anchor, 1, 1) == 'a' then
  rec.a = tonumber(string.sub(anchor, 2))
else
  rec.a = now + tonumber(string.sub(anchor, 2))
end
rcall('HSET', K_SCHEDULES, sid, cjson.encode(rec))
rcall('HSET', K_SCHEDULE_PAYLOADS, sid, payload)
rcall('ZADD', K_SCHEDULES_DUE, 0, sid)
rcall('ZADD', K_SCHEDULE_IDS, 0, sid)
if old then
  return 2
end
return 1
