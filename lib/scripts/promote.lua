-- promote: a delayed job runs now (to the back of its pending list).
--! keys: pending meta callerIds data delayed wake completedJobs eventLog
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: id
-- id: the job's public id.
-- Logs 'promoted' (as a delayed job that came due does). Returns: 1 promoted, 0 not delayed (or
-- no such job).
local seq = resolve(ARGV[1])
if not seq or not rcall('ZSCORE', K_DELAYED, seq) then
  return 0
end
rcall('ZREM', K_DELAYED, seq)
local raw = rcall('HGET', K_META, seq)
requeue(seq, decode_meta(raw), false)
emit_jobs('promoted', { seq }, { raw })
wake()
return 1
