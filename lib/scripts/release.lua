-- release: give leased jobs back to the FRONT of their pending lists, no attempt counted.
--! keys: pending meta leased leaseHolders wake workerLeases eventLog
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: worker_id count leases(seq token)*count
-- Returns: per job 1 released | 0 lease lost.
local wid = ARGV[1]
local count = tonumber(ARGV[2])
local out = release_leases(wid, count, 3)
if count > 0 then
  wake()
end
return out
