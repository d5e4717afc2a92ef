-- promote: a delayed job runs now (to the back of its pending list).
--! keys: pending meta callerIds data delayed wake completedJobs eventLog scheduleLatestJobs
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: id
-- id: the job's public id.
-- A schedule tick's job fires now: its missed window no longer applies, and it becomes its
-- schedule's latest fired tick (skipIfRunning weighs the next ticks against it; it runs even
-- while an earlier tick's job does: the caller asked for it).
-- Logs 'promoted' (as a delayed job that came due does). Returns: 1 promoted, 0 not delayed (or
-- no such job).
local seq = resolve(ARGV[1])
if not seq or not rcall('ZSCORE', K_DELAYED, seq) then
  return 0
end
rcall('ZREM', K_DELAYED, seq)
local raw = rcall('HGET', K_META, seq)
local meta = decode_meta(raw)
if tick_unfired(meta) then
  tick_fired(seq, meta)
end
requeue(seq, meta, false)
emit_jobs('promoted', { seq }, { raw })
wake()
return 1
