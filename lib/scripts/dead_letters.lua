-- dead_letters: the dead-letter set. List a page, requeue one, or purge one / a batch.
--! keys: pending data dataBuckets meta callerIds delayed leased leaseHolders dead wake progress
--! argv: action:list offset limit | action:retry id | action:purge id
--! argv: | action:purgeall limit | action:retryall limit
-- list     -> flat: seq, payload, meta, died ms (oldest first)
-- retry    -> 1 requeued (attempts and expiries reset, to the back), 0 not dead (id: public id)
-- purge    -> 1 purged, 0 not dead
-- purgeall -> number purged (call until 0)
-- retryall -> number requeued, oldest first (call until fewer than limit)
local action = ARGV[1]
if action == 'list' then
  local offset, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
  local ids = rcall('ZRANGE', K_DEAD, offset, offset + limit - 1, 'WITHSCORES')
  local out = {}
  for i = 1, #ids, 2 do
    local n = ids[i]
    out[#out + 1] = n
    out[#out + 1] = data_get(n) or ''
    out[#out + 1] = rcall('HGET', K_META, n) or ''
    out[#out + 1] = ids[i + 1]
  end
  return out
elseif action == 'purgeall' then
  local ids = rcall('ZRANGE', K_DEAD, 0, tonumber(ARGV[2]) - 1)
  for _, n in ipairs(ids) do
    destroy(n, decode_meta(rcall('HGET', K_META, n)))
  end
  return #ids
elseif action == 'retryall' then
  local ids = rcall('ZRANGE', K_DEAD, 0, tonumber(ARGV[2]) - 1)
  local metas = hmget(K_META, ids)
  for i, n in ipairs(ids) do
    local meta = decode_meta(metas[i])
    meta.a, meta.x, meta.r, meta.e = nil, nil, nil, nil
    save_meta(n, meta)
    requeue(n, meta, false)
  end
  if #ids > 0 then
    rcall_each('ZREM', K_DEAD, ids)
    wake()
  end
  return #ids
end
local n = resolve(ARGV[2])
if not n or not rcall('ZSCORE', K_DEAD, n) then
  return 0
end
local meta = decode_meta(rcall('HGET', K_META, n))
if action == 'purge' then
  destroy(n, meta)
  return 1
end
rcall('ZREM', K_DEAD, n)
meta.a, meta.x, meta.r, meta.e = nil, nil, nil, nil
save_meta(n, meta)
requeue(n, meta, false)
wake()
return 1
