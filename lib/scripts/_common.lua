-- Shared functions, inlined into every script by lib/scripts.ts after its KEYS layout
-- (_keys.lua, or _keys_<script>.lua), which binds rcall, the K_* key names and pending_key.
--
-- Meta JSON fields, each present only when not default: i caller id, n name, p priority,
-- a attempts failed, m max attempts, b backoff (opaque to Lua), x lease expiries,
-- e last error, r dead-letter reason.
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
local META_NUMBERS = { 'p', 'a', 'm', 'x' }
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

-- The id (a string) behind a public id, or nil.
local function resolve(id)
  local n = rcall('HGET', K_IDS, id)
  if n then
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

-- Take back a lease that lapsed (expired, or its worker died): count a lease expiry, then put
-- the job at the FRONT of its list, or dead-letter it once it has expired `max_exp` times.
-- Returns true when requeued, false when dead-lettered.
local function expire_lease(n, now, max_exp, max_dead, why)
  rcall('ZREM', K_LEASED, n)
  local holder = rcall('HGET', K_TOKENS, n)
  rcall('HDEL', K_TOKENS, n)
  local meta = decode_meta(rcall('HGET', K_META, n))
  if held_by(holder, 'h') then
    -- A hand-off nobody adopted (its worker died or went away first): the job never ran.
    drop_hand(n)
    requeue(n, meta, true)
    return true
  end
  meta.x = (meta.x or 0) + 1
  if meta.x >= max_exp then
    to_dead(n, meta, 'lease expired ' .. meta.x .. ' times' .. why, now, max_dead)
    return false
  end
  save_meta(n, meta)
  requeue(n, meta, true)
  return true
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
  if rcall('HGET', K_TOKENS, h.n) == h.token .. ':h' then
    rcall('ZREM', K_LEASED, h.n)
    rcall('HDEL', K_TOKENS, h.n)
    rcall('LPUSH', pending_key(h.p), h.n)
    wake()
  end
end

-- Take a lease on up to `count` pending jobs for worker `wid` ("0" = no worker).
-- A job handed off to parked workers and still in the wake list is taken in its turn (first
-- of its priority: its list was empty when it came). A worker left with free slots is marked
-- parked for `park_ms` (0 = not a worker that parks), so that adds hand jobs off to it.
-- Appends id, token, payload, meta to `out`; returns the number leased.
local function lease_jobs(count, lease_ms, wid, now, out, park_ms)
  if wid ~= '0' then
    rcall('ZREM', K_PARKED, wid)
  end
  local hand = parse_hand(rcall('LPOP', K_WAKE))
  promote(now, 1000)
  local ids, datas, metas = {}, {}, {}
  local drained = false
  local last_p = 0
  -- A cancelled job leaves its id in a pending list (its data is gone): skip it and pop on,
  -- so `count` live jobs are leased while any are pending.
  while #ids < count and not drained do
    local popped = {}
    local need = count - #ids
    for p = 0, 9 do
      if need <= 0 then
        break
      end
      if hand and not hand.taken and hand.p == p then
        hand.taken = true
        if rcall('HGET', K_TOKENS, hand.n) == hand.token .. ':h' then
          popped[#popped + 1] = hand.n
          need = need - 1
          last_p = p
        end
      end
      local got = need > 0 and rcall('LPOP', KEYS[p + 1], need)
      if got then
        last_p = p
        for _, n in ipairs(got) do
          popped[#popped + 1] = n
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
        if d[i] then
          ids[#ids + 1] = n
          datas[#datas + 1] = d[i]
          metas[#metas + 1] = m[i]
        end
      end
    end
  end
  local more = false
  if not drained then
    -- Lists before the last one popped from were emptied on the way.
    for p = last_p, 9 do
      if rcall('LLEN', KEYS[p + 1]) > 0 then
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
  if park_ms > 0 and live < count then
    rcall('ZADD', K_PARKED, now + park_ms, wid)
  end
  if live == 0 then
    return 0
  end
  local base = rcall('INCRBY', K_TOK, live) - live
  local deadline = now + lease_ms
  local zargs, hargs, sargs = {}, {}, {}
  for i, n in ipairs(ids) do
    local token = int(base + i)
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
  return live
end

-- When the next delayed job is due (ms), or -1.
local function next_due()
  local first = rcall('ZRANGE', K_DELAYED, 0, 0, 'WITHSCORES')
  if first[2] then
    return tonumber(first[2])
  end
  return -1
end
