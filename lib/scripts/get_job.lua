-- get_job: the state of one job, by public id.
--! keys: data meta callerIds delayed leased dead results progress waitingChildren
--! argv: id
-- Returns: { state, seq, payload, meta, score (due / deadline / died ms, or ''), progress }
--   with state one of pending | delayed | leased | dead | waiting-children (a flow parent; score:
--   since when) | completed | unknown;
--   for completed, payload is the stored result ('' when none is stored: a caller id within
--   its dedupe window) and score is 1 when a result is stored.
local id = ARGV[1]
local seq = resolve(id)
if not seq then
  local res = rcall('HGET', K_RESULTS, id)
  if res then
    return { 'completed', '', res, '', 1, '' }
  end
  local until_ms = taken_until(rcall('HGET', K_CALLER_IDS, id))
  if until_ms and until_ms > now_ms() then
    return { 'completed', '', '', '', 0, '' }
  end
  return { 'unknown' }
end
local data = data_get(seq)
local meta = rcall('HGET', K_META, seq) or ''
local prog = rcall('HGET', K_PROGRESS, seq) or ''
local s = rcall('ZSCORE', K_LEASED, seq)
if s then
  return { 'leased', seq, data, meta, s, prog }
end
s = rcall('ZSCORE', K_DELAYED, seq)
if s then
  return { 'delayed', seq, data, meta, s, prog }
end
s = rcall('ZSCORE', K_DEAD, seq)
if s then
  return { 'dead', seq, data, meta, s, prog }
end
s = rcall('ZSCORE', K_WAITING_CHILDREN, seq)
if s then
  return { 'waiting-children', seq, data, meta, s, prog }
end
return { 'pending', seq, data, meta, '', prog }
