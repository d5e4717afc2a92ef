-- lease: the manual lease() (a Worker leases with complete_and_lease.lua): promote due delayed
-- jobs, then lease up to `count` jobs, highest priority first.
--! keys: pending tokenCounter data dataBuckets meta callerIds delayed leased leaseHolders wake parked workerLeases scheduleLatestJobs flowControl rateLog eventLog addedTimes completedJobs
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: count lease_ms worker_id
-- worker_id: '0' = none.
-- Returns: a lease reply (lease_reply in lib/scripts/lib/leasing.lua): { now, deadline, next
--   due, drain, paused, '' (no flags), ids, then per job: payload, meta }.
local now = now_ms()
ev_gather() -- this call's events (promoted, active): one entry
local lease_ms = tonumber(ARGV[2])
local out = lease_reply(now, lease_ms)
local count = tonumber(ARGV[1])
lease_into(out, count, lease_ms, ARGV[3], now, 0, false, count)
ev_flush()
return out
