-- Caller ids (the ids users give): resolving a public id, keeping it taken after completion.

-- A caller id kept taken after its job completed is stored as '~<until ms>' (dedupeWindowMs),
-- or '~<until ms>:<seq>' while that job is kept (keepCompleted: the id resolves to it for
-- getJob until it is trimmed, even after <until>, when the id is free for adds again).
local function taken_until(v)
  if v and string.sub(v, 1, 1) == '~' then
    return tonumber(string.match(v, '^~(%d+)'))
  end
  return nil
end

-- The kept completed job a caller-id value names ('~<until>:<seq>'), or nil.
local function kept_of(v)
  return v and string.match(v, '^~%d+:(%d+)$')
end

-- The job `seq` with caller id `cid` completed: keep the id taken for `window` ms, so an
-- add of it meanwhile changes nothing (clean() drops it afterwards); 0 frees it now. A job added
-- with a dedupe window (`throttled`: meta t) keeps it until that window's end if that is later.
-- `kept`: the job is kept (keepCompleted), and the id names it until it is trimmed.
local function keep_taken(cid, seq, now, window, throttled, kept)
  if rcall('HGET', K_CALLER_IDS, cid) ~= seq then
    return
  end
  local until_ms = now + window
  if throttled then
    until_ms = math.max(until_ms, tonumber(rcall('ZSCORE', K_KEPT_CALLER_IDS, cid)) or 0)
  end
  if kept then
    rcall('HSET', K_CALLER_IDS, cid, '~' .. int(until_ms) .. ':' .. seq)
    if until_ms > now then
      rcall('ZADD', K_KEPT_CALLER_IDS, until_ms, cid)
    end
  elseif until_ms > now then
    rcall('HSET', K_CALLER_IDS, cid, '~' .. int(until_ms))
    rcall('ZADD', K_KEPT_CALLER_IDS, until_ms, cid)
  else
    rcall('HDEL', K_CALLER_IDS, cid)
  end
end

-- The seq (a string) of the live job behind a public id, or nil (a kept completed job is not
-- live: kept_job finds it).
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
    if meta.i == nil and not is_kept(id) then
      return id
    end
  end
  return nil
end

-- The seq of the kept completed job behind a public id, or nil.
local function kept_job(id)
  local v = rcall('HGET', K_CALLER_IDS, id)
  local seq = nil
  if v then
    seq = kept_of(v)
  elseif string.match(id, '^[1-9][0-9]*$') then
    seq = id
  end
  if seq and is_kept(seq) and (seq ~= id or decode_meta(rcall('HGET', K_META, seq)).i == nil) then
    return seq
  end
  return nil
end
