-- get_job: the state of one job, by public id.
--! keys: data meta callerIds delayed leased dead results resultExpiries progress waitingChildren leaseHolders completedJobs completedInfo addedTimes
--! argv: id
-- Returns: { state, seq, payload, meta, score (due / deadline / died / waiting since /
--   finished ms, or ''), progress, added ms, started ms (0: not known), holder (leased:
--   '<token>:<worker id>'; completed and kept: its info, '<worker id>:<attempts made>[:<result>]';
--   else '') }
--   with state one of pending | delayed | leased | dead | waiting-children (a flow parent) |
--   completed | unknown;
--   for a completed job that is not kept, payload is the stored result ('' when none is stored:
--   a caller id within its dedupe window) and score is 1 when a result is stored.
local id = ARGV[1]
-- The result stored by id (storeResults), unless its time is over (clean() drops it later).
local function stored_result()
  local res = rcall('HGET', K_RESULTS, id)
  if res then
    local expires = tonumber(rcall('ZSCORE', K_RESULT_EXPIRIES, id))
    if expires and expires <= now_ms() then
      return nil
    end
  end
  return res
end
local seq = resolve(id)
if not seq then
  local kept = kept_job(id)
  if kept then
    local added, started = times_get({ kept })
    local info = rcall('HGET', K_COMPLETED_INFO, kept) or ''
    if not string.find(info, '^[^:]*:[^:]*:') then
      -- No result kept with it: the one stored by id (storeResults), if any.
      local res = stored_result()
      if res then
        info = info .. ':' .. res
      end
    end
    return {
      'completed',
      kept,
      data_get(kept),
      rcall('HGET', K_META, kept) or '',
      rcall('ZSCORE', K_COMPLETED_JOBS, kept),
      rcall('HGET', K_PROGRESS, kept) or '',
      added[1],
      started[1],
      info,
    }
  end
  local res = stored_result()
  if res then
    return { 'completed', '', res, '', 1, '', 0, 0, '' }
  end
  local until_ms = taken_until(rcall('HGET', K_CALLER_IDS, id))
  if until_ms and until_ms > now_ms() then
    return { 'completed', '', '', '', 0, '', 0, 0, '' }
  end
  return { 'unknown' }
end
local data = data_get(seq)
local meta = rcall('HGET', K_META, seq) or ''
local prog = rcall('HGET', K_PROGRESS, seq) or ''
local added, started = times_get({ seq })
local state, score, holder = 'pending', '', ''
local s = rcall('ZSCORE', K_LEASED, seq)
if s then
  state, score, holder = 'leased', s, rcall('HGET', K_LEASE_HOLDERS, seq) or ''
else
  s = rcall('ZSCORE', K_DELAYED, seq)
  if s then
    state, score = 'delayed', s
  else
    s = rcall('ZSCORE', K_DEAD, seq)
    if s then
      state, score = 'dead', s
    end
  end
end
if state == 'pending' then
  -- (Its score is its seq, the order parents were added in: no time to show.)
  if rcall('ZSCORE', K_WAITING_CHILDREN, seq) then
    state = 'waiting-children'
  end
end
return { state, seq, data, meta, score, prog, added[1], started[1], holder }
