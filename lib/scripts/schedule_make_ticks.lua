-- schedule_make_ticks: make the next ticks of a schedule, each a job with caller id
-- '<schedule>:<tick ms>' in the delayed set (due at its tick, promoted on Redis time like any
-- delayed job). Run after an upsert and by clean() for schedules whose made ticks run low. The
-- caller computed the ticks (cron, tz) from the record it read (version v): when the record
-- changed since, nothing happens, so racing callers and re-sent calls add nothing twice.
-- Missed ticks (lib/schedules): with 'skip' each tick job gets a drop-by time (meta z) of
-- tick + missed-after ms; with 'once' each but the latest gets max(tick + missed-after, next
-- tick), so after an outage only the latest overdue tick fires. A tick due already fires at
-- once (fire_tick).
-- Logs (one entry) 'added' for every tick job made, 'delayed' for those made ahead (they log
-- 'promoted' when they fire, or 'cancelled' when dropped: promote), and 'cancelled' for one due
-- already that skipIfRunning drops; one due already that fires is pending at once: 'added' only,
-- as a job added without a delay.
--! keys: schedules schedulePayloads schedulesDue seqCounter data dataBuckets meta callerIds delayed wake pending scheduleLatestJobs addedTimes completedJobs eventLog
--! keys: groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: schedule_id version ended due_ahead_ms missed:once|skip missed_after_ms ticks...
-- version: of the record read; ended: 1 when the schedule ends after these ticks; due_ahead_ms:
-- it is due again this many ms before its last tick; ticks: ascending ms.
-- Returns: { 1 done | 0 stale, ticks added, Redis now }.
local sid, version, ended, ahead = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', tonumber(ARGV[4])
local skip, late = ARGV[5] == 'skip', tonumber(ARGV[6])
local rec = sched_record(sid)
local now = now_ms()
if not rec or rec.v ~= version or rec.e == 1 then
  return { 0, 0, now }
end
local payload = rcall('HGET', K_SCHEDULE_PAYLOADS, sid) or ''
prune_due(sid, rec, now)
local ticks = {}
for i = 7, #ARGV do
  local tick = tonumber(ARGV[i])
  if not rec.t or tick > rec.t then
    ticks[#ticks + 1] = tick
  end
end
-- The latest tick made before is not the latest any more: it may be dropped when late (not
-- when changeDelay moved it: it fires at the time chosen).
if not skip and rec.t and ticks[1] then
  local seq = rcall('HGET', K_CALLER_IDS, sid .. ':' .. int(rec.t))
  if tick_waits(seq) and tonumber(rcall('ZSCORE', K_DELAYED, seq)) == rec.t then
    local meta = decode_meta(rcall('HGET', K_META, seq))
    meta.z = math.max(rec.t + late, ticks[1])
    save_meta(seq, meta)
  end
end
local added, delayed, placed = 0, {}, false
-- For the log: the public ids (caller ids) of the jobs made, delayed and dropped, and their meta
-- JSON, read for their group when the template has one (as add.lua).
local made, made_raws, delayed_ids, delayed_raws, dropped, dropped_raws = {}, {}, {}, {}, {}, {}
local grouped = false
for i, tick in ipairs(ticks) do
  local cid = sid .. ':' .. int(tick)
  if not rcall('HGET', K_CALLER_IDS, cid) and not (skip and now > tick + late) then
    local seq = int(rcall('INCR', K_SEQ_COUNTER))
    local ok, meta = pcall(cjson.decode, rec.j or '')
    if not ok or type(meta) ~= 'table' then
      meta = {}
    end
    meta.i = cid
    if tick > now then
      meta.u = 1
      if skip then
        meta.z = tick + late
      elseif ticks[i + 1] then
        meta.z = math.max(tick + late, ticks[i + 1])
      end
    end
    local raw = encode_meta(meta)
    rcall('HSET', K_CALLER_IDS, cid, seq)
    data_set({ seq, payload })
    times_set_added({ seq }, now)
    rcall('HSET', K_META, seq, raw)
    grouped = grouped or meta.g ~= nil
    made[#made + 1] = cid
    made_raws[#made] = raw
    if tick > now then
      delayed[#delayed + 1] = tick
      delayed[#delayed + 1] = seq
      delayed_ids[#delayed_ids + 1] = cid
      delayed_raws[#delayed_ids] = raw
      rec.m[#rec.m + 1] = tick
    elseif fire_tick(seq, meta, now) then
      requeue(seq, meta, false)
      placed = true
    else
      dropped[#dropped + 1] = cid
      dropped_raws[#dropped] = raw
    end
    added = added + 1
  end
  rec.t = tick
  rec.c = (tonumber(rec.c) or 0) + 1
end
if #delayed > 0 then
  schedule(delayed)
end
if placed then
  wake()
end
ev_gather()
emit_jobs('added', made, grouped and made_raws)
emit_jobs('delayed', delayed_ids, grouped and delayed_raws)
emit_jobs('cancelled', dropped, grouped and dropped_raws)
ev_flush()
rec.v = version + 1
if ended then
  rec.e = 1
  rcall('ZREM', K_SCHEDULES_DUE, sid)
elseif rec.t then
  rcall('ZADD', K_SCHEDULES_DUE, rec.t - ahead, sid)
end
rcall('HSET', K_SCHEDULES, sid, cjson.encode(rec))
return { 1, added, now }
