-- Caller ids (the ids users give): resolving a public id, keeping it taken after completion.

-- A caller id kept taken after its job completed is stored as '~<until ms>' (dedupeWindowMs).
local function taken_until(v)
  if v and string.sub(v, 1, 1) == '~' then
    return tonumber(string.sub(v, 2))
  end
  return nil
end

-- The job `seq` with caller id `cid` completed: keep the id taken for `window` ms, so an
-- add of it meanwhile changes nothing (clean() drops it afterwards); 0 frees it now. A job added
-- with a dedupe window (`throttled`: meta t) keeps it until that window's end if that is later.
local function keep_taken(cid, seq, now, window, throttled)
  if rcall('HGET', K_CALLER_IDS, cid) ~= seq then
    return
  end
  local until_ms = now + window
  if throttled then
    until_ms = math.max(until_ms, tonumber(rcall('ZSCORE', K_KEPT_CALLER_IDS, cid)) or 0)
  end
  if until_ms > now then
    rcall('HSET', K_CALLER_IDS, cid, '~' .. int(until_ms))
    rcall('ZADD', K_KEPT_CALLER_IDS, until_ms, cid)
  else
    rcall('HDEL', K_CALLER_IDS, cid)
  end
end

-- The seq (a string) behind a public id, or nil.
local function resolve(id)
  local seq = rcall('HGET', K_CALLER_IDS, id)
  if seq then
    if taken_until(seq) then
      return nil
    end
    return seq
  end
  if string.match(id, '^[1-9][0-9]*$') and data_has(id) then
    local meta = decode_meta(rcall('HGET', K_META, id))
    if meta.i == nil then
      return id
    end
  end
  return nil
end
