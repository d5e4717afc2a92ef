-- Job payloads, in buckets: the hash <data>:<b> holds the payloads of seqs 128·b … 128·b + 127,
-- so a bucket stays a compact listpack (Redis' default hash-max-listpack-entries is 128) and a
-- waiting job costs ~20 B instead of a hash-table entry (~70 B). Every bucket shares the queue's
-- hash tag, so it lives in the queue's Cluster slot. The set dataBuckets lists the buckets that
-- exist (obliterate and repair walk it); a bucket leaves it when its last payload goes.
-- DATA_SPAN comes from lib/keys.ts (the prelude binds it).
-- This call's bucket names by number: each formatted once (string.format is printf, ~1k
-- instructions; a call names a job's bucket several times: payload, times, event).
local data_bucket_names = {}

-- This call's seqs read as numbers (false: not a counter value): a call looks at a job's seq
-- several times (its bucket, its times), and each first look costs a pattern match and a strtod.
local seq_numbers = {}

-- Job `seq` as a number, or nil when it is not a counter value (only hand-written ones).
local function seq_number(seq)
  local n = seq_numbers[seq]
  if n == nil then
    n = string.find(seq, '^%d+$') and seq + 0 or false
    seq_numbers[seq] = n
  end
  return n or nil
end

-- The bucket of job `seq` ('x' for a seq that is not a counter value: only hand-written ones).
local function data_bucket(seq)
  local n = seq_number(seq)
  if not n then
    return 'x'
  end
  n = (n - n % DATA_SPAN) / DATA_SPAN
  local b = data_bucket_names[n]
  if not b then
    b = string.format('%d', n)
    data_bucket_names[n] = b
  end
  return b
end

local function data_key(seq)
  return K_DATA .. ':' .. data_bucket(seq)
end

-- The payload of job `seq`, or false.
local function data_get(seq)
  return rcall('HGET', data_key(seq), seq)
end

local function data_has(seq)
  return rcall('HEXISTS', data_key(seq), seq) == 1
end

-- seqs grouped by bucket: the bucket numbers in first-seen order, and per bucket its seqs and
-- their positions in `seqs`.
local function data_groups(seqs)
  local order, groups = {}, {}
  for i = 1, #seqs do
    local seq = seqs[i]
    local b = data_bucket(seq)
    local g = groups[b]
    if not g then
      g = { seqs = {}, at = {}, n = 0 }
      groups[b] = g
      order[#order + 1] = b
    end
    local n = g.n + 1
    g.n = n
    g.seqs[n] = seq
    g.at[n] = i
  end
  return order, groups
end

-- The payloads of `seqs`, in their order (false for a missing one).
local function data_mget(seqs)
  local order, groups = data_groups(seqs)
  if #order == 1 then
    return hmget(K_DATA .. ':' .. order[1], seqs)
  end
  local out = {}
  for _, b in ipairs(order) do
    local g = groups[b]
    local got = hmget(K_DATA .. ':' .. b, g.seqs)
    for j = 1, #g.at do
      out[g.at[j]] = got[j]
    end
  end
  return out
end

-- Store payloads: `pairs` is { seq, payload, seq, payload, … }.
local function data_set(pairs)
  local seqs = {}
  for i = 1, #pairs, 2 do
    seqs[#seqs + 1] = pairs[i]
  end
  local order, groups = data_groups(seqs)
  if #order == 1 then
    rcall_each('HSET', K_DATA .. ':' .. order[1], pairs)
  else
    for _, b in ipairs(order) do
      local args = {}
      for _, i in ipairs(groups[b].at) do
        args[#args + 1] = pairs[2 * i - 1]
        args[#args + 1] = pairs[2 * i]
      end
      rcall_each('HSET', K_DATA .. ':' .. b, args)
    end
  end
  rcall_each('SADD', K_DATA_BUCKETS, order)
end

-- Store the payload of one new job (add_plain.lua's call of one job: data_set_run without its
-- tables), in its bucket `b` (the bucket's name: data_bucket's).
local function data_set_one(seq, payload, b)
  rcall('HSET', K_DATA .. ':' .. b, seq, payload)
  rcall('SADD', K_DATA_BUCKETS, b)
end

-- data_set for one add call's new jobs (add_plain.lua): `pairs` holds the consecutive counter
-- seqs base + 1, base + 2, … in order. Their buckets are consecutive ranges of them: one HSET per
-- bucket (at most DATA_SPAN jobs) and one SADD, without data_groups' tables.
local function data_set_run(base, pairs)
  local n = #pairs / 2
  local b, last = math.floor((base + 1) / DATA_SPAN), math.floor((base + n) / DATA_SPAN)
  if b == last then
    b = int(b)
    rcall('HSET', K_DATA .. ':' .. b, unpack(pairs))
    rcall('SADD', K_DATA_BUCKETS, b)
    return
  end
  local buckets = {}
  local j = 1 -- the first job of bucket b
  while j <= n do
    local k = math.min(n, (b + 1) * DATA_SPAN - 1 - base) -- its last
    buckets[#buckets + 1] = int(b)
    rcall('HSET', K_DATA .. ':' .. buckets[#buckets], unpack(pairs, 2 * j - 1, 2 * k))
    j, b = k + 1, b + 1
  end
  rcall('SADD', K_DATA_BUCKETS, unpack(buckets))
end

-- Drop the payloads of `seqs`; a bucket left empty leaves the bucket set, and its jobs' times
-- (K_ADDED_TIMES:<b>, times.lua) go with it.
local function data_del(seqs)
  local order, groups = data_groups(seqs)
  for _, b in ipairs(order) do
    local key = K_DATA .. ':' .. b
    rcall_each('HDEL', key, groups[b].seqs)
    if rcall('EXISTS', key) == 0 then
      rcall('SREM', K_DATA_BUCKETS, b)
      rcall('DEL', K_ADDED_TIMES .. ':' .. b)
    end
  end
end
