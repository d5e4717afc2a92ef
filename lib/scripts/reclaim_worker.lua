-- reclaim_worker: if the worker's heartbeat lapsed (checked again here, atomically), put every
-- job it still holds back at the FRONT (see expire_lease) — leased, prefetched, and handed off
-- to it but not adopted yet (its hand-off list) — and forget the worker.
-- A worker reclaimed while parked may be frozen (SIGSTOP, a paused VM, a partition) with its idle
-- wait still blocked in Redis until its parked-until: that wait takes the next wake-up or
-- hand-off into its hand-off list, where nobody would see it (a job handed off there waited for
-- its lease to lapse). It is noted in K_RECLAIMED_WORKERS, and clean() calls this again with
-- sweep = 1 until then: what its wait took goes back (hand-offs to the front), and wakes a worker.
--! keys: pending data dataBuckets meta callerIds delayed leased leaseHolders dead workers wake progress parked reclaimedWorkers heartbeatRecord workerLeases workerHandoffs eventLog waitingChildren flowParent flowOutbox flowOutboxAt flowCancels addedTimes jobLogs metricsCompleted metricsFailed metricsDead workerInfo rateLog
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: worker_id heartbeat_timeout_ms max_lease_expiries max_dead sweep
-- Returns: { reclaimed, dead-lettered }, or { -1 } when the worker is alive after all.
local wid, hb_timeout, max_exp, max_dead = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
-- Hand-offs in its hand-off list (taken from the wake list, not adopted: it may have started
-- them) go back to the front of their lists, and the list goes. Returns how many went back.
local function give_back_handoffs()
  local taken = worker_handoffs()
  local back = 0
  for i = #taken, 1, -1 do
    if hand_live(taken[i]) then
      unhand(taken[i], true)
      back = back + 1
    end
  end
  rcall('DEL', K_WORKER_HANDOFFS)
  return back
end
if ARGV[5] == '1' then
  -- A sweep: the worker was reclaimed; back in the workers set, it lives again (its own).
  if rcall('ZSCORE', K_WORKERS, wid) then
    rcall('ZREM', K_RECLAIMED_WORKERS, wid)
    return { -1 }
  end
  -- (Plain wake-ups count: worker_handoffs() lists the hand-offs only.)
  local entries = rcall('LLEN', K_WORKER_HANDOFFS)
  local back = give_back_handoffs()
  unhand_if_none_parked(now)
  -- (A wake-up it took, or a hand-off: someone else looks.)
  if entries > 0 then
    wake()
  end
  return { back, 0 }
end
if not lapsed(rcall('ZSCORE', K_WORKERS, wid), now, hb_timeout) then
  return { -1 }
end
local reclaimed, dead = 0, 0
-- The jobs this worker still holds, in the order they were leased (tokens increase).
local held = {}
for _, seq in ipairs(rcall('SMEMBERS', K_WORKER_LEASES)) do
  local t = rcall('HGET', K_LEASE_HOLDERS, seq)
  if held_by(t, wid) then
    held[#held + 1] = { seq, t }
  end
end
in_lease_order(held)
-- Walk backwards so the first job leased ends up first in line.
for i = #held, 1, -1 do
  if expire_lease(held[i][1], now, max_exp, max_dead, ' (worker died)') then
    reclaimed = reclaimed + 1
  else
    dead = dead + 1
  end
end
reclaimed = reclaimed + give_back_handoffs()
rcall('DEL', K_WORKER_LEASES)
rcall('ZREM', K_WORKERS, wid)
rcall('HDEL', K_WORKER_INFO, wid)
local parked_until = tonumber(rcall('ZSCORE', K_PARKED, wid))
if parked_until and parked_until > now then
  rcall('ZADD', K_RECLAIMED_WORKERS, parked_until, wid)
  -- The set goes by itself after its last entry's time (a clean() drops entries past theirs).
  local last = tonumber(rcall('ZRANGE', K_RECLAIMED_WORKERS, -1, -1, 'WITHSCORES')[2])
  rcall('PEXPIRE', K_RECLAIMED_WORKERS, int(last - now + 1000))
end
rcall('ZREM', K_PARKED, wid)
unhand_if_none_parked(now)
if reclaimed > 0 then
  wake()
end
metrics_flush(now)
return { reclaimed, dead }
