-- schedule_get: read schedules (lib/schedules): one by id, or a page of all of them by id.
--! keys: schedules schedulePayloads scheduleIds scheduleLatestJobs callerIds delayed meta
--! argv: schedule_id offset limit with_payloads
-- schedule_id: '' = a page; with_payloads: 1|0 (a read for getSchedule/listSchedules).
-- Returns: { Redis now, then per schedule: id, record JSON, payload ('' unless asked), its latest
--   tick that fired (ms; '' none: tick_fired), and (with payloads) its ticks made whose jobs
--   still wait to fire, comma-separated (a drain or a cancel removes one: it never fires) }; a
--   schedule asked for by id that does not exist is left out.
local ids
if ARGV[1] ~= '' then
  ids = { ARGV[1] }
else
  local offset, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
  ids = rcall('ZRANGE', K_SCHEDULE_IDS, offset, offset + limit - 1)
end
local out = { now_ms() }
for _, sid in ipairs(ids) do
  local rec = rcall('HGET', K_SCHEDULES, sid)
  if rec then
    out[#out + 1] = sid
    out[#out + 1] = rec
    out[#out + 1] = ARGV[4] == '1' and (rcall('HGET', K_SCHEDULE_PAYLOADS, sid) or '') or ''
    out[#out + 1] = string.match(rcall('HGET', K_SCHEDULE_LATEST_JOBS, sid) or '', ':(%d+)$') or ''
    local waiting = {}
    if ARGV[4] == '1' then
      for _, tick in ipairs(sched_record(sid).m) do
        if tick_waits(rcall('HGET', K_CALLER_IDS, sid .. ':' .. int(tick))) then
          waiting[#waiting + 1] = int(tick)
        end
      end
    end
    out[#out + 1] = table.concat(waiting, ',')
  end
end
return out
