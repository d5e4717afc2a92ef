-- Schedules (lib/schedules): a schedule's record (JSON in K_SCHEDULES) and the tick jobs it made.
-- Record fields: d definition (JSON, compared as bytes), j tick meta JSON, v version (every
-- write adds one), a anchor ms (`every` ticks are a + k * every), t last tick made, c ticks
-- made, m ticks made that had not fired when last looked at, e 1 once it has ended (limit or
-- endAt reached); p, kept from records an older version wrote: the latest tick that came due,
-- fired or dropped (lastFireAt now comes from K_SCHEDULE_LATEST_JOBS: tick_fired).

-- The record of schedule `sid`, or nil. An unreadable record reads as an empty one (a
-- different definition: an upsert replaces it).
local function sched_record(sid)
  local raw = rcall('HGET', K_SCHEDULES, sid)
  if not raw then
    return nil
  end
  local ok, rec = pcall(cjson.decode, raw)
  if not ok or type(rec) ~= 'table' then
    rec = {}
  end
  if type(rec.m) ~= 'table' then
    rec.m = {}
  end
  return rec
end

-- The meta JSON of job `seq` (a caller-id value: nil, or '~…' once taken) of one of a schedule's
-- ticks when it waits in the delayed set for its tick to fire (not a fired one waiting there
-- again: tick_unfired), else nil.
local function tick_waits(seq)
  if not seq or taken_until(seq) or not rcall('ZSCORE', K_DELAYED, seq) then
    return nil
  end
  local raw = rcall('HGET', K_META, seq)
  if tick_unfired(decode_meta(raw)) then
    return raw
  end
  return nil
end

-- Forget the ticks of `rec` that fired or were dropped since (fire_tick): a tick whose time came
-- but whose job no clean or lease promoted yet stays (a changed schedule drops it: drop_unfired).
local function prune_due(sid, rec, now)
  local keep = {}
  for _, tick in ipairs(rec.m) do
    if tick > now or tick_waits(rcall('HGET', K_CALLER_IDS, sid .. ':' .. int(tick))) then
      keep[#keep + 1] = tick
    end
  end
  rec.m = keep
end

-- Drop the tick jobs of `rec` that have not fired yet (still in the delayed set: also one whose
-- time came and that nothing promoted yet; not one that fired and waits there again, e.g. for a
-- retry), each logged 'cancelled' (one entry); `rec.m` keeps the others.
local function drop_unfired(sid, rec)
  local kept, dropped, raws = {}, {}, {}
  for _, tick in ipairs(rec.m) do
    local cid = sid .. ':' .. int(tick)
    local seq = rcall('HGET', K_CALLER_IDS, cid)
    local raw = tick_waits(seq)
    if raw then
      rcall('ZREM', K_DELAYED, seq)
      drop_delayed(seq, cid)
      dropped[#dropped + 1] = seq
      raws[#dropped] = raw
    else
      kept[#kept + 1] = tick
    end
  end
  rec.m = kept
  emit_jobs('cancelled', dropped, raws)
end
