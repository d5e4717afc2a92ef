-- completed_jobs: the kept completed jobs (keepCompleted, lib/scripts/lib/completed.lua): purge
-- one or a page, or run one again.
--! keys: pending seqCounter data dataBuckets meta callerIds completedJobs completedInfo progress addedTimes jobLogs wake eventLog dead
--! keys: groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: action:purge id | action:purgeall limit | action:rerun id call
-- purge    -> 1 purged, 0 not a kept completed job (id: public id)
-- purgeall -> number purged, oldest first (call until fewer than limit)
-- rerun    -> the public id of a new incarnation of the kept job: its payload, name, priority,
--             max attempts, backoff, trace context and group, added now, pending at the back
--             of its list or group (the kept job stays kept); a job of a flow runs again as a
--             plain job: no parent, no children (docs/history.md); 0 not a kept completed job; -1 when
--             the id names a dead-lettered job (retryDead runs it again); E_BAD_STATE when the id
--             or its caller id names a live job (a newer incarnation runs or waits).
--             A caller id goes to the new job even within its dedupe window. `call`: the
--             caller's token for this call (random): a re-send of it (its reply lost) answers
--             the job the first run made and does nothing again (meta R, on the kept job
--             '<call>:<new public id>', on the new one '<call>').
local action = ARGV[1]
local now = now_ms()
if action == 'purgeall' then
  return trim_completed(now, 0, 0, tonumber(ARGV[2]))
end
local seq = kept_job(ARGV[2])
if not seq then
  -- A live job has this id (e.g. a rerun of it waits or runs): nothing to purge or run again.
  local live = action == 'rerun' and resolve(ARGV[2])
  if live and rcall('ZSCORE', K_DEAD, live) then
    return -1
  end
  if live then
    -- The job this very call made (re-sent: its caller id names the new job now)?
    local made = decode_meta(rcall('HGET', K_META, live))
    if made.R == ARGV[3] then
      return made.i or live
    end
  end
  return live and E_BAD_STATE or 0
end
local raw = rcall('HGET', K_META, seq)
if action == 'purge' then
  forget_completed({ seq }, { raw }, now)
  rcall('ZREM', K_COMPLETED_JOBS, seq)
  return 1
end
local meta = decode_meta(raw)
local call = ARGV[3] .. ':'
if type(meta.R) == 'string' and string.sub(meta.R, 1, #call) == call then
  return string.sub(meta.R, #call + 1) -- a re-send: the first run made it
end
if meta.i and rcall('HGET', K_CALLER_IDS, meta.i) and not taken_until(rcall('HGET', K_CALLER_IDS, meta.i)) then
  return E_BAD_STATE
end
local fresh = {}
for _, f in ipairs({ 'i', 'n', 'p', 'm', 'b', 'c', 'g' }) do
  fresh[f] = meta[f]
end
local new = int(rcall('INCR', K_SEQ_COUNTER))
data_set({ new, data_get(seq) })
times_set_added({ new }, now)
fresh.R = ARGV[3]
save_meta(new, fresh)
meta.R = ARGV[3] .. ':' .. (fresh.i or new)
save_meta(seq, meta)
if fresh.i then
  rcall('HSET', K_CALLER_IDS, fresh.i, new)
end
requeue(new, fresh, false)
wake()
emit('added', fresh.i or new, ev_group(fresh))
return fresh.i or new
