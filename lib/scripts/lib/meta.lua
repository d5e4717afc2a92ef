-- Job metadata (the meta hash). Meta JSON fields, each present only when not default:
-- i caller id, n name, p priority, a attempts failed, m max attempts, b backoff (opaque to Lua),
-- x lease expiries counted against maxLeaseExpiries (deaths during solo runs only), s suspect
-- (1: its worker died or its lease lapsed while it ran beside other jobs; it runs alone next
-- time), e last error, r dead-letter reason, z drop-by (a schedule tick promoted after this Redis
-- time missed its window and is dropped, see fire_tick; cleared when it fires), w its schedule
-- when it skips while an earlier tick's job exists (skipIfRunning; cleared when it fires), t 1
-- when its caller id has a dedupe window from its add (`dedupe.ttlMs`: the taken zset holds its
-- end), c trace context (opaque to Lua: an add hook's string, e.g. a W3C traceparent; kept
-- across retries), g its group (a string of 1-256 bytes: it waits in its group's zset, not in
-- a pending list; lib/scripts/lib/groups.lua), P its flow parent ('<queue>\t<seq>\t<caller id>',
-- see flows.lua), W on a flow parent its delay once its children ended (ms; present for its
-- whole life), k the worker of its last attempt that did not complete (processedBy, history.lua),
-- l 1 when it has a log (history.lua), u 1 on a schedule tick's job until its tick fires (made
-- by schedule_make_ticks; cleared with z and w when it fires, see fire_tick), f its last
-- F_KEEP runs that failed, were delayed or rate-limited, oldest first, space-separated, each
-- '<token>:<1|2>': its lease token and what came of it (1 back in line or delayed, 2
-- dead-lettered: fail.lua, move_to_delayed.lua, rate_limited.lua answer a re-send of that call
-- from it — also once the job ran and failed again meanwhile, ahead of the re-send).
--
-- Lease tokens: '<n>' (a value of the token counter) for a regular lease, 's<n>' for a solo run
-- of a suspect job (its death counts). The lease hash (K_LEASE_HOLDERS) holds '<token>:<holder>':
-- a worker id, or 'h' for a job handed off to whichever parked worker pops it
-- (docs/internals/hand-off.md).
--
-- Words: a job's seq is its number (a value of the seq counter, Lease.seq in TypeScript); its
-- public id is its caller id when it has one, else its seq.

-- Metadata as a table. Never raises: metadata written by hand in a shape the queue does not
-- expect (not JSON, not an object, fields of the wrong type or range) must not make every script
-- that touches the job fail (one such job would stall a worker's batch or a whole clean()).
-- Unusable fields are dropped (defaults apply); the client dead-letters a job whose metadata
-- is not a JSON object when it is leased ('undecodable metadata').
local META_NUMBERS = { 'p', 'a', 'm', 'x', 's', 'z', 't', 'l', 'W', 'u' }

local META_STRINGS = { 'i', 'n', 'e', 'r', 'w', 'c', 'k', 'g', 'P', 'f' }

local function decode_meta(s)
  if not s or s == '' then
    return {}
  end
  local ok, meta = pcall(cjson.decode, s)
  if not ok and string.find(s, '\\u[dD][89a-fA-F]') then
    -- JSON.stringify writes a lone UTF-16 surrogate as an escape (\ud800) that cjson refuses:
    -- read those as U+FFFD rather than lose the whole meta (the add refuses such ids, names,
    -- groups; metadata from elsewhere may still carry one).
    ok, meta = pcall(cjson.decode, (string.gsub(s, '\\u[dD][89a-fA-F]%x%x', '\\ufffd')))
  end
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
  if meta.g == '' then
    meta.g = nil
  end
  return meta
end

-- How many runs meta f remembers: a re-send comes after a reconnect, a few runs at most later.
local F_KEEP = 4

-- What the run of lease `token` that ended by a fail, a delay or a rate limit came to ('1' or
-- '2', see meta f), or nil when none of the last F_KEEP did.
local function ended_run(meta, token)
  return meta.f and string.match(' ' .. meta.f, ' ' .. token .. ':([12])')
end

-- Remember that the run of lease `token` ended so (meta f, the newest F_KEEP).
local function end_run(meta, token, answer)
  local f = meta.f and (meta.f .. ' ' .. token .. ':' .. answer) or (token .. ':' .. answer)
  local _, spaces = string.gsub(f, ' ', '')
  if spaces >= F_KEEP then
    f = string.sub(f, string.find(f, ' ', 1, true) + 1)
  end
  meta.f = f
end

-- The group (meta g) in stored meta JSON `raw`, or nil; read without decoding when it is written
-- plainly (no escapes in the name), as the queue writes it: the hot paths look at it per job.
local function meta_group(raw)
  if not string.find(raw, '"g":', 1, true) then
    return nil
  end
  local g = string.match(raw, '"g":"([^"\\]*)"')
  if g then
    return g ~= '' and g or nil
  end
  return decode_meta(raw).g
end

-- The meta JSON of jobs `seqs`, as hmget gives it; none read when no job has any: then {}, nil
-- for each (plain jobs have none: an HMGET of a batch of absent fields still costs its arguments).
local function metas_of(seqs)
  if rcall('EXISTS', K_META) == 0 then
    return {}
  end
  return hmget(K_META, seqs)
end

-- Metadata as JSON. cjson writes a number with 14 significant digits: a maxAttempts past them
-- (up to 2^53, what the API takes) is written whole (a larger one, written by hand, as cjson
-- writes it: '%d' of 2^63 or more is not that number).
local function encode_meta(meta)
  local m = meta.m
  if not m or m < 1e14 or m > 9007199254740992 then
    return cjson.encode(meta)
  end
  meta.m = nil
  local rest = cjson.encode(meta)
  meta.m = m
  return '{"m":' .. int(m) .. (rest == '{}' and '}' or ',' .. string.sub(rest, 2))
end

local function save_meta(seq, meta)
  if next(meta) ~= nil then
    rcall('HSET', K_META, seq, encode_meta(meta))
  else
    rcall('HDEL', K_META, seq)
  end
end

local function prio_of(meta)
  return meta.p or DEFAULT_PRIO
end


-- Whether a lease hash value ('token:workerId', or nil) belongs to worker `wid`.
local function held_by(value, wid)
  return value ~= nil and value ~= false and string.sub(value, -(#wid + 1)) == ':' .. wid
end
