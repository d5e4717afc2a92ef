-- Job payloads, in buckets: the hash <data>:<b> holds the payloads of ids 128·b … 128·b + 127,
-- so a bucket stays a compact listpack (Redis' default hash-max-listpack-entries is 128) and a
-- waiting job costs ~20 B instead of a hash-table entry (~70 B). Every bucket shares the queue's
-- hash tag, so it lives in the queue's Cluster slot. The set dataBuckets lists the buckets that
-- exist (obliterate and repair walk it); a bucket leaves it when its last payload goes.
-- DATA_SPAN comes from lib/keys.ts (the prelude binds it).
-- The bucket of id n ('x' for an id that is not a counter value: only hand-written ones).
local function data_bucket(n)
  if not string.match(n, '^%d+$') then
    return 'x'
  end
  return string.format('%d', math.floor(tonumber(n) / DATA_SPAN))
end

local function data_key(n)
  return K_DATA .. ':' .. data_bucket(n)
end

-- The payload of job n, or false.
local function data_get(n)
  return rcall('HGET', data_key(n), n)
end

local function data_has(n)
  return rcall('HEXISTS', data_key(n), n) == 1
end

-- ids grouped by bucket: the bucket numbers in first-seen order, and per bucket its ids and
-- their positions in `ids`.
local function data_groups(ids)
  local order, groups = {}, {}
  for i, n in ipairs(ids) do
    local b = data_bucket(n)
    local g = groups[b]
    if not g then
      g = { ids = {}, at = {} }
      groups[b] = g
      order[#order + 1] = b
    end
    g.ids[#g.ids + 1] = n
    g.at[#g.at + 1] = i
  end
  return order, groups
end

-- The payloads of `ids`, in their order (false for a missing one).
local function data_mget(ids)
  local order, groups = data_groups(ids)
  if #order == 1 then
    return hmget(K_DATA .. ':' .. order[1], ids)
  end
  local out = {}
  for _, b in ipairs(order) do
    local g = groups[b]
    local got = hmget(K_DATA .. ':' .. b, g.ids)
    for j = 1, #g.at do
      out[g.at[j]] = got[j]
    end
  end
  return out
end

-- Store payloads: `pairs` is { id, payload, id, payload, … }.
local function data_set(pairs)
  local ids = {}
  for i = 1, #pairs, 2 do
    ids[#ids + 1] = pairs[i]
  end
  local order, groups = data_groups(ids)
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

-- Drop the payloads of `ids`; a bucket left empty leaves the bucket set.
local function data_del(ids)
  local order, groups = data_groups(ids)
  for _, b in ipairs(order) do
    local key = K_DATA .. ':' .. b
    rcall_each('HDEL', key, groups[b].ids)
    if rcall('EXISTS', key) == 0 then
      rcall('SREM', K_DATA_BUCKETS, b)
    end
  end
end
