-- Schedules (lib/schedules): a schedule's record (JSON in K_SCHEDULES) and the tick jobs it made.
-- Record fields: d definition (JSON, compared as bytes), j tick meta JSON, v version (every
-- write adds one), a anchor ms (`every` ticks are a + k * every), t last tick made, c ticks
-- made, m ticks made that had not come due when last looked at, p latest tick that came due,
-- e 1 once it has ended (limit or endAt reached).

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

-- Whether the job `seq` (a caller-id value: nil, or '~…' once taken) of one of a schedule's
-- ticks waits in the delayed set for its tick to fire (not a fired one waiting there again:
-- tick_unfired).
local function tick_waits(seq)
  return seq
    and not taken_until(seq)
    and rcall('ZSCORE', K_DELAYED, seq)
    and tick_unfired(decode_meta(rcall('HGET', K_META, seq)))
end

-- Move the ticks of `rec` that came due by `now` out of its list of coming ticks (p: the latest)
-- — once fired: a tick whose time came but whose job no clean or lease promoted yet stays (a
-- changed schedule drops it: drop_unfired).
local function prune_due(sid, rec, now)
  local keep = {}
  for _, tick in ipairs(rec.m) do
    local due = tick <= now
    if due then
      due = not tick_waits(rcall('HGET', K_CALLER_IDS, sid .. ':' .. int(tick)))
    end
    if not due then
      keep[#keep + 1] = tick
    elseif not rec.p or tick > rec.p then
      rec.p = tick
    end
  end
  rec.m = keep
end

-- Drop the tick jobs of `rec` that have not fired yet (still in the delayed set: also one whose
-- time came and that nothing promoted yet; not one that fired and waits there again, e.g. for a
-- retry); `rec.m` keeps the others.
local function drop_unfired(sid, rec)
  local kept = {}
  for _, tick in ipairs(rec.m) do
    local cid = sid .. ':' .. int(tick)
    local seq = rcall('HGET', K_CALLER_IDS, cid)
    if tick_waits(seq) then
      rcall('ZREM', K_DELAYED, seq)
      drop_delayed(seq, cid)
    else
      kept[#kept + 1] = tick
    end
  end
  rec.m = kept
end
