-- Shared functions, inlined into every script by lib/scripts.ts after its KEYS layout
-- (_keys.lua, or _keys_<script>.lua), which binds rcall, the K_* key names and pending_key.
--
-- Meta JSON fields, each present only when not default: i caller id, n name, p priority,
-- a attempts failed, m max attempts, b backoff (opaque to Lua), x lease expiries counted
-- against maxLeaseExpiries (deaths during solo runs only), s suspect (1: its worker died or its
-- lease lapsed while it ran beside other jobs; it runs alone next time), e last error,
-- r dead-letter reason.
--
-- Lease tokens: '<n>' for a regular lease, 's<n>' for a solo run of a suspect job (its death
-- counts). The lease hash holds '<token>:<holder>': a worker id, or 'h' for a job handed off
-- to whichever parked worker pops it (see add.lua).
local DEFAULT_PRIO = 5

-- Error codes; lib/errors.ts maps them to WorkQueueError codes.
local E_LEASE_LOST, E_NOT_FOUND, E_BAD_STATE = -1, -2, -3

local function now_ms()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function int(x)
  return string.format('%d', x)
end

-- Lua's unpack() and redis.call() take at most ~8,000 values: variable-size argument lists go
-- through these, in chunks of CHUNK values (even, so pairs stay together). Every public
-- operation accepts sizes far above that limit.
local CHUNK = 1000

-- rcall(cmd, key, <values>) for every chunk of `values`.
local function rcall_each(cmd, key, values)
  for i = 1, #values, CHUNK do
    rcall(cmd, key, unpack(values, i, math.min(i + CHUNK - 1, #values)))
  end
end

-- HMGET of any number of fields, as one list (false for a missing field).
local function hmget(key, fields)
  if #fields <= CHUNK then
    return rcall('HMGET', key, unpack(fields))
  end
  local out = {}
  for i = 1, #fields, CHUNK do
    local part = rcall('HMGET', key, unpack(fields, i, math.min(i + CHUNK - 1, #fields)))
    for j = 1, #part do
      out[#out + 1] = part[j]
    end
  end
  return out
end

-- Metadata as a table. Never raises: metadata written by hand in a shape the queue does not
-- expect (not JSON, not an object, fields of the wrong type or range) must not make every script
-- that touches the job fail (one such job would stall a worker's batch or a whole clean()).
-- Unusable fields are dropped (defaults apply); the client dead-letters a job whose metadata
-- is not a JSON object when it is leased ('undecodable metadata').
local META_NUMBERS = { 'p', 'a', 'm', 'x', 's' }
local META_STRINGS = { 'i', 'n', 'e', 'r' }
local function decode_meta(s)
  if not s or s == '' then
    return {}
  end
  local ok, meta = pcall(cjson.decode, s)
  if not ok or type(meta) ~= 'table' then
    return {}
  end
  for _, f in ipairs(META_NUMBERS) do
    local v = meta[f]
    if v ~= nil and (type(v) ~= 'number' or v < 0 or v % 1 ~= 0) then
      meta[f] = nil
    end
  end
  if meta.p and meta.p > 9 then
    meta.p = nil
  end
  for _, f in ipairs(META_STRINGS) do
    if meta[f] ~= nil and type(meta[f]) ~= 'string' then
      meta[f] = nil
    end
  end
  return meta
end

local function save_meta(n, meta)
  if next(meta) ~= nil then
    rcall('HSET', K_META, n, cjson.encode(meta))
  else
    rcall('HDEL', K_META, n)
  end
end

local function prio_of(meta)
  return meta.p or DEFAULT_PRIO
end

local function public_id(n, meta)
  return meta.i or n
end

-- Wake one blocked worker; at most one token waits, so the list stays tiny.
local function wake()
  if rcall('LLEN', K_WAKE) == 0 then
    rcall('RPUSH', K_WAKE, '1')
  end
end

-- Add delayed jobs (flat due, id, due, id, ...). When one is due before every job already
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

-- A caller id kept taken after its job completed is stored as '~<until ms>' (dedupeWindowMs).
local function taken_until(v)
  if v and string.sub(v, 1, 1) == '~' then
    return tonumber(string.sub(v, 2))
  end
  return nil
end

-- The job with caller id `cid` (number n) completed: keep the id taken for `window` ms, so an
-- add of it meanwhile changes nothing (clean() drops it afterwards); 0 frees it now.
local function keep_taken(cid, n, now, window)
  if rcall('HGET', K_IDS, cid) ~= n then
    return
  end
  if window > 0 then
    rcall('HSET', K_IDS, cid, '~' .. int(now + window))
    rcall('ZADD', K_TAKEN, now + window, cid)
  else
    rcall('HDEL', K_IDS, cid)
  end
end

-- The id (a string) behind a public id, or nil.
local function resolve(id)
  local n = rcall('HGET', K_IDS, id)
  if n then
    if taken_until(n) then
      return nil
    end
    return n
  end
  if string.match(id, '^[1-9][0-9]*$') and rcall('HEXISTS', K_DATA, id) == 1 then
    local meta = decode_meta(rcall('HGET', K_META, id))
    if meta.i == nil then
      return id
    end
  end
  return nil
end

-- Whether a lease hash value ('token:workerId', or nil) belongs to worker `wid`.
local function held_by(value, wid)
  return value ~= nil and value ~= false and string.sub(value, -(#wid + 1)) == ':' .. wid
end

-- Remove every trace of job n from wherever it is (it stops existing).
local function destroy(n, meta)
  rcall('HDEL', K_DATA, n)
  rcall('HDEL', K_META, n)
  rcall('HDEL', K_PROG, n)
  rcall('HDEL', K_TOKENS, n)
  rcall('ZREM', K_LEASED, n)
  rcall('ZREM', K_DELAYED, n)
  rcall('ZREM', K_DEAD, n)
  if meta.i and rcall('HGET', K_IDS, meta.i) == n then
    rcall('HDEL', K_IDS, meta.i)
  end
end

local function trim_dead(max_dead)
  local over = rcall('ZCARD', K_DEAD) - max_dead
  if over > 0 then
    local victims = rcall('ZRANGE', K_DEAD, 0, over - 1)
    for _, v in ipairs(victims) do
      destroy(v, decode_meta(rcall('HGET', K_META, v)))
    end
  end
end

-- Move a job that is in no other place to the dead-letter set.
local function to_dead(n, meta, reason, now, max_dead)
  meta.r = reason
  save_meta(n, meta)
  rcall('HDEL', K_PROG, n)
  rcall('ZADD', K_DEAD, now, n)
  trim_dead(max_dead)
end

-- Put a job that is in no other place back in its pending list.
local function requeue(n, meta, front)
  if front then
    rcall('LPUSH', pending_key(prio_of(meta)), n)
  else
    rcall('RPUSH', pending_key(prio_of(meta)), n)
  end
end

-- Sort {id, score} pairs by score, then by numeric id (a sorted set orders equal scores by
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

-- A wake list entry: a hand-off (see add.lua) as { n, token, p, entry }, else nil.
local function parse_hand(w)
  if not w then
    return nil
  end
  local n, token, p = string.match(w, '^h(%d+):(%d+):%d+:(%d):')
  if not n then
    return nil
  end
  return { n = n, token = token, p = tonumber(p), entry = w }
end

-- Drop job n's hand-off entry from the wake list (it is always first there), if it is there:
-- the job was cancelled or went back to its list, so no worker should start it.
local function drop_hand(n)
  local h = parse_hand(rcall('LINDEX', K_WAKE, 0))
  if h and h.n == n then
    rcall('LPOP', K_WAKE)
  end
end

-- Take back a lease that lapsed (expired, or its worker died) and put the job at the FRONT of
-- its list. Poison pills, not bystanders: only a solo run ('s' token) counts a lease expiry
-- (dead-lettered at `max_exp`); a job that ran beside others becomes a suspect and runs alone
-- next time. Returns true when requeued, false when dead-lettered.
local function expire_lease(n, now, max_exp, max_dead, why)
  rcall('ZREM', K_LEASED, n)
  local holder = rcall('HGET', K_TOKENS, n)
  rcall('HDEL', K_TOKENS, n)
  local meta = decode_meta(rcall('HGET', K_META, n))
  if held_by(holder, 'h') then
    -- A hand-off still in the wake list (no worker took it): the job never ran.
    drop_hand(n)
    requeue(n, meta, true)
    return true
  end
  if holder and string.sub(holder, 1, 1) == 's' then
    meta.x = (meta.x or 0) + 1
    if meta.x >= max_exp then
      to_dead(n, meta, 'lease expired ' .. meta.x .. ' times' .. why, now, max_dead)
      return false
    end
  else
    meta.s = 1
  end
  save_meta(n, meta)
  requeue(n, meta, true)
  return true
end

-- The hand-offs in the calling worker's hand-off list (K_HANDS) as parsed entries (plain
-- wake-ups left out).
local function hands()
  local out = {}
  for _, e in ipairs(rcall('LRANGE', K_HANDS, 0, -1)) do
    local h = parse_hand(e)
    if h then
      out[#out + 1] = h
    end
  end
  return out
end

-- Replace the calling worker's hand-off list with `keep` (entries still to be adopted).
local function keep_hands(keep)
  rcall('DEL', K_HANDS)
  if #keep > 0 then
    rcall('RPUSH', K_HANDS, unpack(keep))
  end
end

-- Whether hand-off h still waits for its worker to adopt it (not cancelled or taken back).
local function hand_live(h)
  return rcall('HGET', K_TOKENS, h.n) == h.token .. ':h'
end

-- Put a handed-off job back at the front of its list. `ran`: a worker took it (it may have
-- started it): like any run beside others, the job becomes a suspect.
local function unhand(h, ran)
  rcall('ZREM', K_LEASED, h.n)
  rcall('HDEL', K_TOKENS, h.n)
  if ran then
    local meta = decode_meta(rcall('HGET', K_META, h.n))
    meta.s = 1
    save_meta(h.n, meta)
  end
  rcall('LPUSH', pending_key(h.p), h.n)
  wake()
end

-- Promote up to `limit` due delayed jobs to the back of their pending lists, in due order
-- (ties in the order the jobs were added).
local function promote(now, limit)
  local first = rcall('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
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
  for i, n in ipairs(due) do
    requeue(n, decode_meta(metas[i]), false)
  end
  rcall_each('ZREM', K_DELAYED, due)
  wake()
  return #due
end

-- With no worker parked any more (the last one left, paused or died), a hand-off waiting in
-- the wake list has nobody to pop it: put the job back first in its pending list.
local function unhand_if_none_parked(now)
  if #rcall('ZRANGEBYSCORE', K_PARKED, now, '+inf', 'LIMIT', 0, 1) > 0 then
    return
  end
  local h = parse_hand(rcall('LINDEX', K_WAKE, 0))
  if not h then
    return
  end
  rcall('LPOP', K_WAKE)
  if hand_live(h) then
    unhand(h, false)
  end
end

-- A heartbeat of worker `wid`. Beats also tell whether Redis itself was out of reach (down,
-- restarting, paused): when no worker's beat landed for `hb_timeout`, the beats missed
-- meanwhile prove nothing, so heartbeats are judged again only from now on (K_HB 's').
local function beat(wid, now, hb_timeout)
  rcall('ZADD', K_WORKERS, now, wid)
  local last = tonumber(rcall('HGET', K_HB, 'b'))
  rcall('HSET', K_HB, 'b', now)
  if last and now - last > hb_timeout then
    rcall('HSET', K_HB, 's', now)
  end
end

-- Whether a worker last seen at `beat_ms` (nil: never) counts as dead: silent for
-- `hb_timeout` while beats were landing.
local function lapsed(beat_ms, now, hb_timeout)
  if beat_ms and tonumber(beat_ms) >= now - hb_timeout then
    return false
  end
  return (tonumber(rcall('HGET', K_HB, 's')) or 0) <= now - hb_timeout
end

-- Whether worker `wid` holds any job (its lease set, checked against the lease hash).
local function holds_any(wid)
  local held = rcall('SMEMBERS', K_WLEASES)
  if #held == 0 then
    return false
  end
  local tokens = hmget(K_TOKENS, held)
  for i = 1, #held do
    if held_by(tokens[i], wid) then
      return true
    end
  end
  return false
end

-- Take a lease on up to `count` pending jobs for worker `wid` ("0" = no worker).
-- A job handed off to parked workers and still in the wake list is taken in its turn (first
-- of its priority: its list was empty when it came). A worker left with free slots is marked
-- parked for `park_ms` (0 = not a worker that parks), so that adds hand jobs off to it.
-- A suspect job (meta s) runs alone: it is leased only as the single job of a batch, to a
-- worker holding no other job, with an 's' token; met anywhere else it goes back first in line
-- and the batch ends there, and a worker holding other jobs is told to drain (finish what it
-- holds, lease nothing meanwhile) so that it can take the suspect next.
-- Appends id, token, payload, meta to `out`; returns the number leased and whether the worker
-- should drain.
local function lease_jobs(count, lease_ms, wid, now, out, park_ms)
  if wid ~= '0' then
    rcall('ZREM', K_PARKED, wid)
  end
  local hand = parse_hand(rcall('LPOP', K_WAKE))
  promote(now, 1000)
  local ids, datas, metas = {}, {}, {}
  local drained, stopped, drain, solo = false, false, false, false
  local last_p = 0
  -- A cancelled job leaves its id in a pending list (its data is gone): skip it and pop on,
  -- so `count` live jobs are leased while any are pending.
  while #ids < count and not drained and not stopped do
    local popped, prios = {}, {}
    local need = count - #ids
    for p = 0, 9 do
      if need <= 0 then
        break
      end
      if hand and not hand.taken and hand.p == p then
        hand.taken = true
        if hand_live(hand) then
          popped[#popped + 1] = hand.n
          prios[#popped] = p
          need = need - 1
          last_p = p
        end
      end
      local got = need > 0 and rcall('LPOP', pending_key(p), need)
      if got then
        last_p = p
        for _, n in ipairs(got) do
          popped[#popped + 1] = n
          prios[#popped] = p
        end
        need = need - #got
      end
    end
    if need > 0 then
      drained = true
    end
    if #popped > 0 then
      local d = hmget(K_DATA, popped)
      local m = hmget(K_META, popped)
      for i, n in ipairs(popped) do
        if stopped then
          -- Back first in line, in order (walked backwards below).
        elseif d[i] and m[i] and string.find(m[i], '"s":', 1, true) and decode_meta(m[i]).s then
          if #ids == 0 and (wid == '0' or not holds_any(wid)) then
            ids[1], datas[1], metas[1] = n, d[i], m[i]
            solo = true
            popped[i] = false
          else
            drain = wid ~= '0'
          end
          stopped = true
        elseif d[i] then
          ids[#ids + 1] = n
          datas[#datas + 1] = d[i]
          metas[#metas + 1] = m[i]
          popped[i] = false
        else
          popped[i] = false -- a cancelled job's tombstone: dropped
        end
      end
      if stopped then
        for i = #popped, 1, -1 do
          local n = popped[i]
          if n then
            if hand and n == hand.n then
              -- The hand-off goes back as a plain pending job.
              rcall('ZREM', K_LEASED, n)
              rcall('HDEL', K_TOKENS, n)
            end
            rcall('LPUSH', pending_key(prios[i]), n)
          end
        end
      end
    end
  end
  local more = stopped
  if not drained and not stopped then
    -- Lists before the last one popped from were emptied on the way.
    for p = last_p, 9 do
      if rcall('LLEN', pending_key(p)) > 0 then
        more = true
        break
      end
    end
  end
  if more then
    -- More work waits: pass the wake on to another idle worker.
    wake()
  else
    -- Every pending list is empty: a wake token left behind would only wake a worker for
    -- nothing (and outlive the queue's jobs), so drop it.
    rcall('DEL', K_WAKE)
  end
  if hand and not hand.taken then
    -- Not reached (the batch filled up first): it stays first in line for the next worker.
    rcall('LPUSH', K_WAKE, hand.entry)
  end
  local live = #ids
  if park_ms > 0 and live < count and not drain and not solo then
    rcall('ZADD', K_PARKED, now + park_ms, wid)
  end
  if live == 0 then
    return 0, drain
  end
  local base = rcall('INCRBY', K_TOK, live) - live
  local deadline = now + lease_ms
  local zargs, hargs, sargs = {}, {}, {}
  for i, n in ipairs(ids) do
    local token = int(base + i)
    if solo then
      token = 's' .. token
    end
    zargs[#zargs + 1] = deadline
    zargs[#zargs + 1] = n
    hargs[#hargs + 1] = n
    hargs[#hargs + 1] = token .. ':' .. wid
    sargs[#sargs + 1] = n
    out[#out + 1] = n
    out[#out + 1] = token
    out[#out + 1] = datas[i]
    out[#out + 1] = metas[i] or ''
  end
  rcall_each('ZADD', K_LEASED, zargs)
  rcall_each('HSET', K_TOKENS, hargs)
  if wid ~= '0' then
    rcall_each('SADD', K_WLEASES, sargs)
  end
  return live, drain
end

-- When the next delayed job is due (ms), or -1.
local function next_due()
  local first = rcall('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
  if first[2] then
    return tonumber(first[2])
  end
  return -1
end
