-- Basics every script may use: Redis time, integers as strings, chunked variable-size calls,
-- waking a worker.
-- (Error codes E_<code> come from SCRIPT_CODES in lib/errors.ts: the assembler binds those a
-- script uses in its prelude.)

local DEFAULT_PRIO = 5

local function now_ms()
  local t = rcall('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function int(x)
  return string.format('%d', x)
end

-- int() of base + 1 … base + n (integers ≥ 0), in order: each ten of them share their leading
-- digits, formatted once (int is printf, ~1.5k instructions; a concatenation ~0.3k).
local function int_run(base, n)
  if n == 1 then
    return { int(base + 1) }
  end
  local out, tens, lead = {}, -1, ''
  for i = 1, n do
    local v = base + i
    local d = v % 10
    local t = (v - d) / 10
    if t ~= tens then
      tens = t
      lead = t > 0 and int(t) or ''
    end
    out[i] = lead .. string.char(48 + d)
  end
  return out
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
  if #fields == 0 then
    return {} -- (HMGET needs a field)
  end
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

-- Wake one blocked worker; at most one token waits, so the list stays tiny.
local function wake()
  if rcall('LLEN', K_WAKE) == 0 then
    rcall('RPUSH', K_WAKE, '1')
  end
end

-- Whether a job waits to be leased: in a pending list, or in a group ready to start one.
local function any_pending()
  local keys = {}
  for p = 0, 9 do
    keys[p + 1] = pending_key(p)
  end
  return rcall('EXISTS', unpack(keys)) > 0 or rcall('ZCARD', K_GROUPS_READY) > 0
end

-- How many jobs are leased (the leased set without its pad, LEASE_PAD in lib/keys.ts).
local function leased_count()
  return rcall('ZCOUNT', K_LEASED, '-inf', '(+inf')
end

-- After jobs left the leased set: with none left, the pads go too (LEASE_PAD), so that a queue
-- with nothing leased keeps neither key (the next lease call writes them again).
local function lease_unpad()
  if rcall('ZCARD', K_LEASED) == 1 and rcall('ZSCORE', K_LEASED, LEASE_PAD) then
    rcall('ZREM', K_LEASED, LEASE_PAD)
    rcall('HDEL', K_LEASE_HOLDERS, LEASE_PAD)
  end
end
