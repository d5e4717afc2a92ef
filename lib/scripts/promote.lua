-- promote: a delayed job runs now (to the back of its pending list).
--! keys: pending meta callerIds data delayed wake completedJobs
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: id
-- id: the job's public id.
-- Returns: 1 promoted, 0 not delayed (or no such job).
local seq = resolve(ARGV[1])
if not seq or not rcall('ZSCORE', K_DELAYED, seq) then
  return 0
end
rcall('ZREM', K_DELAYED, seq)
requeue(seq, decode_meta(rcall('HGET', K_META, seq)), false)
wake()
return 1
