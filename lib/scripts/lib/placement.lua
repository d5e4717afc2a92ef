-- Where a job waits: pending lists, the delayed set, the dead-letter set.

-- Add delayed jobs (flat due, seq, due, seq, ...). When one is due before every job already
-- waiting there, wake an idle worker: it may be sleeping until a later due time.
local function schedule(flat)
  local first = rcall('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
  local earliest = tonumber(flat[1])
  for i = 3, #flat, 2 do
    earliest = math.min(earliest, tonumber(flat[i]))
  end
  rcall_each('ZADD', K_DELAYED, flat)
  if first[2] == nil or earliest < tonumber(first[2]) then
    wake()
  end
end

-- Remove every trace of job `seq` from wherever it is (it stops existing).
local function destroy(seq, meta)
  if meta.g then
    group_unplace(seq, meta)
  end
  data_del({ seq })
  rcall('HDEL', K_META, seq)
  rcall('HDEL', K_PROGRESS, seq)
  rcall('HDEL', K_LEASE_HOLDERS, seq)
  rcall('ZREM', K_LEASED, seq)
  lease_unpad()
  rcall('ZREM', K_DELAYED, seq)
  rcall('ZREM', K_DEAD, seq)
  if meta.i and rcall('HGET', K_CALLER_IDS, meta.i) == seq then
    rcall('HDEL', K_CALLER_IDS, meta.i)
  end
  logs_forget(seq)
  flow_forget(seq, meta)
end

-- The dead-letter set back to `max_dead`, its oldest going with all their keys (at most `limit`,
-- when given).
local function trim_dead(max_dead, limit)
  local over = rcall('ZCARD', K_DEAD) - max_dead
  if limit and over > limit then
    over = limit
  end
  if over > 0 then
    local victims = rcall('ZRANGE', K_DEAD, 0, over - 1)
    for _, v in ipairs(victims) do
      destroy(v, decode_meta(rcall('HGET', K_META, v)))
    end
  end
end

-- Move a job that is in no other place to the dead-letter set.
local function to_dead(seq, meta, reason, now, max_dead)
  meta.r = reason
  save_meta(seq, meta)
  rcall('HDEL', K_PROGRESS, seq)
  rcall('ZADD', K_DEAD, now, seq)
  emit('dead', meta.i or seq, 'why', ev_text(reason), dead_fields(seq, meta, now))
  metric_add('dead', 1)
  flow_job_ended(seq, meta, 'f', reason, now)
  trim_dead(max_dead)
end

-- Put a job that is in no other place back in its pending list (a grouped job: in its group).
local function requeue(seq, meta, front)
  if meta.g then
    group_requeue(seq, meta, front, nil)
  elseif front then
    rcall('LPUSH', pending_key(prio_of(meta)), seq)
  else
    rcall('RPUSH', pending_key(prio_of(meta)), seq)
  end
end

-- Give `count` leases of worker `wid` back to the FRONT of their lists, no attempt counted, in
-- their order (ARGV[at], ARGV[at + 1]: the first one's seq and token, and so on); logs
-- 'released'. Returns per lease 1 released | 0 lease lost (release.lua, rate_limited.lua).
local function release_leases(wid, count, at)
  local out = {}
  local released = {} -- for the event log
  -- Walk backwards so the first job given ends up first in line.
  for j = count, 1, -1 do
    local seq, token = ARGV[at + 2 * (j - 1)], ARGV[at + 2 * j - 1]
    local current = rcall('HGET', K_LEASE_HOLDERS, seq)
    if current == token .. ':' .. wid then
      rcall('ZREM', K_LEASED, seq)
      rcall('HDEL', K_LEASE_HOLDERS, seq)
      lease_unpad()
      local meta = decode_meta(rcall('HGET', K_META, seq))
      if meta.g then
        group_run_ended(meta.g, nil)
      end
      requeue(seq, meta, true)
      out[j] = 1
      released[#released + 1] = seq
      current = nil
    else
      out[j] = 0
    end
    -- Forget it from our lease set, unless we hold the job under another (newer) lease.
    if wid ~= '0' and not held_by(current, wid) then
      rcall('SREM', K_WORKER_LEASES, seq)
    end
  end
  emit_jobs('released', released)
  return out
end

-- Sort {seq, score} pairs by score, then by seq (a sorted set orders equal scores by
-- the member's bytes, which puts '10' before '9': not the order the jobs came in).
local function sort_by_score_then_id(items)
  table.sort(items, function(a, b)
    if a[2] ~= b[2] then
      return a[2] < b[2]
    end
    return (tonumber(a[1]) or 0) < (tonumber(b[1]) or 0)
  end)
  return items
end

-- Drop a job that waits in the delayed set and was never anywhere else (a schedule tick that
-- missed its window, or one its schedule no longer wants): its data, meta and caller id `cid`
-- go; the caller takes it out of the delayed set.
local function drop_delayed(seq, cid)
  data_del({ seq })
  rcall('HDEL', K_META, seq)
  if cid and rcall('HGET', K_CALLER_IDS, cid) == seq then
    rcall('HDEL', K_CALLER_IDS, cid)
  end
end

-- Whether a job's meta is that of a schedule tick that has not fired yet: u (ticks made since
-- 2026-12-05), or the z or w of one made before (fire_tick clears all three). A tick's job that
-- fired and waits again in the delayed set (a retry's backoff, a DelayedError step, changeDelay)
-- has none: it is a job like any other.
local function tick_unfired(meta)
  return meta.u ~= nil or meta.z ~= nil or meta.w ~= nil
end

-- Schedule tick `seq` fires: K_SCHEDULE_LATEST_JOBS gets '<seq>:<tick ms>' for its schedule (the
-- job skipIfRunning weighs the next ticks against — meta w, set when the template says so — and
-- the tick getSchedule's lastFireAt reports: a dropped tick never gets here) and its tick fields
-- go. Its caller id (meta i) is '<schedule>:<tick ms>'.
local function tick_fired(seq, meta)
  local sid, tick = string.match(meta.i or '', '^(.*):(%d+)$')
  if sid then
    -- The latest tick by its time, not by when it fired: one moved later (changeDelay) firing
    -- after the next, or earlier ones firing after a promote() of a later one, do not take it
    -- back. (A bare seq, written by an older version, is replaced.)
    local prev = string.match(rcall('HGET', K_SCHEDULE_LATEST_JOBS, sid) or '', ':(%d+)$')
    if not prev or tonumber(prev) <= tonumber(tick) then
      rcall('HSET', K_SCHEDULE_LATEST_JOBS, sid, seq .. ':' .. tick)
    end
  end
  meta.z, meta.w, meta.u = nil, nil, nil
  save_meta(seq, meta)
end

-- A schedule tick comes due (lib/schedules): false when it is dropped instead, because it missed
-- its window (meta z: drop-by time) or because the job of an earlier tick of its schedule still
-- exists (meta w: the schedule, when its template says skipIfRunning; K_SCHEDULE_LATEST_JOBS
-- holds '<seq>:<tick>' of its latest tick that fired — a bare seq when an older version wrote it;
-- a dead or kept completed one does not count). Else its tick fields go. The caller logs a
-- dropped tick's 'cancelled' (from the meta it read: this one is gone).
local function fire_tick(seq, meta, now)
  if meta.z and now > meta.z then
    drop_delayed(seq, meta.i)
    return false
  end
  if meta.w then
    local prev = string.match(rcall('HGET', K_SCHEDULE_LATEST_JOBS, meta.w) or '', '^%d+')
    if
      prev
      and prev ~= seq
      and data_has(prev)
      and decode_meta(rcall('HGET', K_META, prev)).r == nil
      and not is_kept(prev)
    then
      drop_delayed(seq, meta.i)
      return false
    end
  end
  tick_fired(seq, meta)
  return true
end

-- Promote up to `limit` due delayed jobs to the back of their pending lists, in due order
-- (ties in the order the jobs were added). A schedule tick may be dropped instead (fire_tick).
-- Returns how many were placed.
local function promote(now, limit)
  local first = rcall('ZRANGE', K_DELAYED, '0', '0', 'WITHSCORES') -- (numbers: printf in Redis)
  if first[2] == nil or tonumber(first[2]) > now then
    return 0
  end
  local scored = rcall('ZRANGEBYSCORE', K_DELAYED, '-inf', now, 'WITHSCORES', 'LIMIT', 0, limit)
  if #scored == 0 then
    return 0
  end
  local items = {}
  for i = 1, #scored, 2 do
    items[#items + 1] = { scored[i], tonumber(scored[i + 1]) }
  end
  sort_by_score_then_id(items)
  local due = {}
  for i, it in ipairs(items) do
    due[i] = it[1]
  end
  local metas = hmget(K_META, due)
  local placed_seqs, placed_metas, dropped_seqs, dropped_metas = {}, {}, {}, {}
  for i, seq in ipairs(due) do
    local meta = decode_meta(metas[i])
    if not tick_unfired(meta) or fire_tick(seq, meta, now) then
      requeue(seq, meta, false)
      placed_seqs[#placed_seqs + 1] = seq
      placed_metas[#placed_metas + 1] = metas[i]
    else
      dropped_seqs[#dropped_seqs + 1] = seq
      dropped_metas[#dropped_metas + 1] = metas[i]
    end
  end
  rcall_each('ZREM', K_DELAYED, due)
  -- (A dropped tick's job is gone without running: 'cancelled', as one cancel() removed.)
  emit_jobs('cancelled', dropped_seqs, dropped_metas)
  emit_jobs('promoted', placed_seqs, placed_metas)
  if #placed_seqs > 0 then
    wake()
  end
  return #placed_seqs
end

-- When the next delayed job is due (ms), or -1.
local function next_due()
  local first = rcall('ZRANGE', K_DELAYED, '0', '0', 'WITHSCORES')
  if first[2] then
    return tonumber(first[2])
  end
  return -1
end
