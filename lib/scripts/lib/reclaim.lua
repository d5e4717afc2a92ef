-- Taking back what lapsed: expired leases, and the heartbeats that tell a dead worker.

-- Take back a lease that lapsed (expired, or its worker died) and put the job at the FRONT of
-- its list. Poison pills, not bystanders: only a solo run ('s' token) counts a lease expiry
-- (dead-lettered at `max_exp`); a job that ran beside others becomes a suspect and runs alone
-- next time. Returns true when requeued, false when dead-lettered.
local function expire_lease(seq, now, max_exp, max_dead, why)
  rcall('ZREM', K_LEASED, seq)
  local holder = rcall('HGET', K_LEASE_HOLDERS, seq)
  rcall('HDEL', K_LEASE_HOLDERS, seq)
  lease_unpad()
  local meta = decode_meta(rcall('HGET', K_META, seq))
  if meta.g then
    group_run_ended(meta.g, now)
  end
  if held_by(holder, 'h') then
    -- A hand-off still in the wake list (no worker took it): the job never ran.
    drop_hand(seq)
    requeue(seq, meta, true)
    return true
  end
  meta.k = string.match(holder or '', ':(.+)$') -- processedBy: the worker of the lapsed run
  if holder and string.sub(holder, 1, 1) == 's' then
    meta.x = (meta.x or 0) + 1
    if meta.x >= max_exp then
      to_dead(seq, meta, 'lease expired ' .. meta.x .. ' times' .. why, now, max_dead)
      return false
    end
  else
    meta.s = 1
  end
  save_meta(seq, meta)
  requeue(seq, meta, true)
  emit('reclaimed', meta.i or seq, 'why', why == '' and 'lease expired' or 'worker died', ev_group(meta))
  return true
end

-- A heartbeat of worker `wid`. Beats also tell whether Redis itself was out of reach (down,
-- restarting, paused): when no worker's beat landed for `hb_timeout`, the beats missed
-- meanwhile prove nothing, so heartbeats are judged again only from now on (K_HEARTBEAT_RECORD 's').
-- A beat of a worker that left (K_HEARTBEAT_RECORD 'l', see note_left) does not bring it back:
-- sent before its leave, it can land after it (held in a stalled Redis, or in a reconnecting
-- client, past close()'s bound on its heartbeat's stop). Returns false for such a beat.
local function beat(wid, now, hb_timeout)
  local rec = rcall('HMGET', K_HEARTBEAT_RECORD, 'b', 'l')
  rcall('HSET', K_HEARTBEAT_RECORD, 'b', now)
  local last = tonumber(rec[1])
  if last and now - last > hb_timeout then
    rcall('HSET', K_HEARTBEAT_RECORD, 's', now)
  end
  if rec[2] and string.find(rec[2], ',' .. wid .. ':', 1, true) then
    return false
  end
  rcall('ZADD', K_WORKERS, now, wid)
  return true
end

-- How long, and how many, workers that left are remembered (see beat).
local LEFT_MS = 600000
local LEFT_MAX = 1000

-- Note worker `wid` as left at `now` in K_HEARTBEAT_RECORD 'l' (",<id>:<left ms>" each, oldest
-- first), dropping those older than LEFT_MS and the oldest past LEFT_MAX.
local function note_left(wid, now)
  local kept, n = {}, 0
  local cut = now - LEFT_MS
  local was = rcall('HGET', K_HEARTBEAT_RECORD, 'l') or ''
  for id, at in string.gmatch(was, ',([^,:]+):(%d+)') do
    if id ~= wid and tonumber(at) >= cut then
      n = n + 1
      kept[n] = ',' .. id .. ':' .. at
    end
  end
  local from = math.max(1, n - LEFT_MAX + 2)
  rcall('HSET', K_HEARTBEAT_RECORD, 'l', table.concat(kept, '', from, n) .. ',' .. wid .. ':' .. int(now))
end

-- Whether a worker last seen at `beat_ms` (nil: never; clean asks whether any may be dead)
-- counts as dead: silent for `hb_timeout` while beats were landing.
-- When no beat of any worker landed for half the timeout, either they all died or Redis was out
-- of their reach — and of ours until now: a Cluster refuses every command while one of its
-- masters fails over, and the first call through afterwards may be this one, before the beats
-- resume. So the first look at such a silence (K_HEARTBEAT_RECORD 'q') judges nobody; a look
-- half a timeout later does: live workers' beats had that long to land. (A cleaner that runs at
-- least every half timeout, as workers' do by default, first looks before anyone lapses: no
-- delay for a worker that really died.)
local function lapsed(beat_ms, now, hb_timeout)
  if beat_ms and tonumber(beat_ms) >= now - hb_timeout then
    return false
  end
  local rec = rcall('HMGET', K_HEARTBEAT_RECORD, 's', 'b', 'q')
  if (tonumber(rec[1]) or 0) > now - hb_timeout then
    return false
  end
  local last = tonumber(rec[2]) or 0
  if now - last <= hb_timeout / 2 then
    return true
  end
  local looked = tonumber(rec[3]) or 0
  if looked <= last then
    rcall('HSET', K_HEARTBEAT_RECORD, 'q', now)
    return false
  end
  return now - looked >= hb_timeout / 2
end

-- Sort `held`, pairs { seq, its lease token (or lease hash value '<token>:<holder>') }, into
-- the order the jobs were leased (tokens increase; a solo run's 's' aside); returns it.
local function in_lease_order(held)
  for _, h in ipairs(held) do
    h[2] = tonumber(string.match(h[2], '^s?(%d+)')) or 0
  end
  table.sort(held, function(a, b)
    return a[2] < b[2]
  end)
  return held
end
