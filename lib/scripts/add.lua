-- add: store and enqueue a batch of jobs.
-- KEYS: see _keys_add.lua.
-- ARGV: the priorities used (digits, see _keys_add.lua), count, then per job 5 values:
--   caller id ('' = generate), payload, meta JSON ('' = none), priority (0..9),
--   schedule ('' = now, 'd<ms>' = delay, 'a<ms>' = absolute Redis time in ms).
-- Returns: flat list, per job: id, added (1 new | 0 an existing job has that caller id).
local count = tonumber(ARGV[2])
-- Redis time, read only when a job has a schedule.
local now = nil
local out = {}
local fresh = 0
for j = 0, count - 1 do
  local cid = ARGV[3 + j * 5]
  if cid == '' or rcall('HEXISTS', K_IDS, cid) == 0 then
    fresh = fresh + 1
  end
end
local base = 0
if fresh > 0 then
  base = rcall('INCRBY', K_ID, fresh) - fresh
end
local data_args = {}
local meta_args = {}
local pending = {}
local delayed = {}
local k = 0
for j = 0, count - 1 do
  local o = 3 + j * 5
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
  rcall('HSET', K_DATA, unpack(data_args))
end
if #meta_args > 0 then
  rcall('HSET', K_META, unpack(meta_args))
end
if #delayed > 0 then
  schedule(delayed)
end
local any = false
for p = 0, 9 do
  local list = pending[p]
  if list then
    rcall('RPUSH', pending_key(p), unpack(list))
    any = true
  end
end
if any then
  wake()
end
return out
