-- add: store and enqueue a batch of jobs.
-- KEYS: see _keys_add.lua.
-- ARGV: the priorities used (digits, see _keys_add.lua), hand-off lease ms (0 = never hand
--   off), count, then per job 5 values: caller id ('' = generate), payload, meta JSON
--   ('' = none), priority (0..9), schedule ('' = now, 'd<ms>' = delay, 'a<ms>' = absolute
--   Redis time in ms).
-- Hand-off: while a worker is parked (idle, blocked on the wake list) and no wake-up waits,
-- the first job to run now is not queued but leased on the spot to "whichever parked worker
-- pops it" (holder 'h', deadline now + hand-off ms = the queue's leaseMs) and pushed to the
-- wake list whole, so the worker that pops it starts at once instead of making a lease call
-- first. The worker adopts the lease (complete.lua) in its next call, before that call's
-- completes; one that dies first lets it lapse and clean() puts the job back at the front
-- without counting an expiry. A busy worker's lease takes the entry like a pending job of its
-- priority (lease_jobs).
-- Returns: flat list, per job: id, added (1 new | 0 an existing job has that caller id).
local hand_ms = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
-- Redis time, read only when a job has a schedule.
local now = nil
local out = {}
local fresh = 0
for j = 0, count - 1 do
  local cid = ARGV[4 + j * 5]
  if cid == '' or rcall('HEXISTS', K_IDS, cid) == 0 then
    fresh = fresh + 1
  end
end
local base = 0
if fresh > 0 then
  base = rcall('INCRBY', K_ID, fresh) - fresh
end
-- Whether the next job to run now may be handed off (decided once, used once).
local can_hand = nil
local function hand_off_now()
  if can_hand == nil then
    can_hand = false
    if hand_ms > 0 and rcall('ZCARD', K_PARKED) > 0 and rcall('LLEN', K_WAKE) == 0 then
      if not now then
        now = now_ms()
      end
      can_hand = #rcall('ZRANGEBYSCORE', K_PARKED, now, '+inf', 'LIMIT', 0, 1) > 0
    end
    return can_hand
  end
  return false
end
local function hand_off(n, payload, meta, prio)
  local token = int(rcall('INCR', K_TOK))
  local deadline = now + hand_ms
  rcall('ZADD', K_LEASED, deadline, n)
  rcall('HSET', K_TOKENS, n, token .. ':h')
  rcall('RPUSH', K_WAKE, 'h' .. n .. ':' .. token .. ':' .. deadline .. ':' .. prio .. ':' .. #meta .. '\n' .. meta .. payload)
end
-- The job to hand off; done after the data is stored (a write that fails, e.g. on a key of
-- the wrong type, then leaves no wake entry for a job without data).
local hand = nil
local data_args = {}
local meta_args = {}
local pending = {}
local delayed = {}
local k = 0
for j = 0, count - 1 do
  local o = 4 + j * 5
  local cid, payload, meta, prio, sched = ARGV[o], ARGV[o + 1], ARGV[o + 2], ARGV[o + 3], ARGV[o + 4]
  local existing = false
  if cid ~= '' then
    existing = rcall('HGET', K_IDS, cid)
  end
  if existing then
    out[#out + 1] = cid
    out[#out + 1] = 0
  else
    k = k + 1
    local n = int(base + k)
    if cid ~= '' then
      rcall('HSET', K_IDS, cid, n)
    end
    data_args[#data_args + 1] = n
    data_args[#data_args + 1] = payload
    if meta ~= '' then
      meta_args[#meta_args + 1] = n
      meta_args[#meta_args + 1] = meta
    end
    local due = nil
    local kind = string.sub(sched, 1, 1)
    if kind ~= '' and not now then
      now = now_ms()
    end
    if kind == 'd' then
      due = now + tonumber(string.sub(sched, 2))
    elseif kind == 'a' then
      due = tonumber(string.sub(sched, 2))
    end
    if due and due > now then
      delayed[#delayed + 1] = due
      delayed[#delayed + 1] = n
    elseif hand_off_now() then
      hand = { n, payload, meta, prio }
    else
      local p = tonumber(prio)
      local list = pending[p]
      if not list then
        list = {}
        pending[p] = list
      end
      list[#list + 1] = n
    end
    if cid ~= '' then
      out[#out + 1] = cid
    else
      out[#out + 1] = n
    end
    out[#out + 1] = 1
  end
end
if #data_args > 0 then
  rcall_each('HSET', K_DATA, data_args)
end
if #meta_args > 0 then
  rcall_each('HSET', K_META, meta_args)
end
if hand then
  hand_off(unpack(hand))
end
if #delayed > 0 then
  schedule(delayed)
end
local any = false
for p = 0, 9 do
  local list = pending[p]
  if list then
    rcall_each('RPUSH', pending_key(p), list)
    any = true
  end
end
if any then
  wake()
end
return out
