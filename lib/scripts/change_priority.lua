-- change_priority: change the priority of a pending or delayed job. A pending job moves to the
-- back of its new list (LREM: O(length of its old list); a grouped job: to the back of its
-- group, O(log of its group's size)); a delayed one keeps its due time.
--! keys: pending meta callerIds data delayed leased dead wake completedJobs
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: id priority
-- id: the job's public id; priority: 0..9.
-- Returns: 1 changed, 0 not pending nor delayed (or no such job).
local seq = resolve(ARGV[1])
if not seq or rcall('ZSCORE', K_LEASED, seq) or rcall('ZSCORE', K_DEAD, seq) then
  return 0
end
local meta = decode_meta(rcall('HGET', K_META, seq))
local old, new = prio_of(meta), tonumber(ARGV[2])
local delayed = rcall('ZSCORE', K_DELAYED, seq)
if meta.g and not delayed then
  -- A grouped pending job: out of its group, back in (at the back) below.
  if not group_take(seq, meta) then
    return 0
  end
elseif not delayed and rcall('LREM', pending_key(old), 1, seq) == 0 then
  return 0
end
meta.p = new
if new == DEFAULT_PRIO then
  meta.p = nil
end
save_meta(seq, meta)
if not delayed then
  requeue(seq, meta, false)
  wake()
end
return 1
