-- dead_letters: the dead-letter set. List a page, requeue one, or purge one / a batch.
--! keys: pending data dataBuckets meta callerIds delayed leased leaseHolders dead wake progress waitingChildren flowParent addedTimes jobLogs completedJobs eventLog
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: action:list offset limit | action:retry id | action:purge id
--! argv: | action:purgeall limit | action:retryall limit
-- list     -> flat: seq, payload, meta, died ms, added ms, started ms (0: not known), oldest first
-- retry    -> 1 requeued (attempts and expiries reset, to the back), 0 not dead (id: public id)
--             (a requeued job logs 'promoted': it waits again, as a delayed job that came due)
-- purge    -> 1 purged, 0 not dead
-- purgeall -> number purged (call until 0)
-- retryall -> number requeued, oldest first (call until fewer than limit)
local action = ARGV[1]
if action == 'list' then
  local offset, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
  local seqs = rcall('ZRANGE', K_DEAD, offset, offset + limit - 1, 'WITHSCORES')
  local only = {}
  for i = 1, #seqs, 2 do
    only[#only + 1] = seqs[i]
  end
  local added, started = times_get(only)
  local out = {}
  for i, seq in ipairs(only) do
    out[#out + 1] = seq
    out[#out + 1] = data_get(seq) or ''
    out[#out + 1] = rcall('HGET', K_META, seq) or ''
    out[#out + 1] = seqs[2 * i]
    out[#out + 1] = added[i]
    out[#out + 1] = started[i]
  end
  return out
elseif action == 'purgeall' then
  local seqs = rcall('ZRANGE', K_DEAD, 0, tonumber(ARGV[2]) - 1)
  for _, seq in ipairs(seqs) do
    destroy(seq, decode_meta(rcall('HGET', K_META, seq)))
  end
  return #seqs
elseif action == 'retryall' then
  local seqs = rcall('ZRANGE', K_DEAD, 0, tonumber(ARGV[2]) - 1)
  local metas = hmget(K_META, seqs)
  for i, seq in ipairs(seqs) do
    local meta = decode_meta(metas[i])
    meta.a, meta.x, meta.r, meta.e = nil, nil, nil, nil
    save_meta(seq, meta)
    requeue(seq, meta, false)
  end
  if #seqs > 0 then
    rcall_each('ZREM', K_DEAD, seqs)
    wake()
  end
  emit_jobs('promoted', seqs, metas)
  return #seqs
end
local seq = resolve(ARGV[2])
if not seq or not rcall('ZSCORE', K_DEAD, seq) then
  return 0
end
local meta = decode_meta(rcall('HGET', K_META, seq))
if action == 'purge' then
  destroy(seq, meta)
  return 1
end
rcall('ZREM', K_DEAD, seq)
meta.a, meta.x, meta.r, meta.e = nil, nil, nil, nil
save_meta(seq, meta)
requeue(seq, meta, false)
wake()
emit_jobs('promoted', { seq })
return 1
