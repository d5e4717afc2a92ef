-- worker_registry: register a worker, beat for it, unpark it or let it leave. Heartbeat times
-- come from Redis.
--! keys: pending meta leased leaseHolders workers wake workerIdCounter parked heartbeatRecord workerLeases workerHandoffs workerInfo eventLog
--! keys: workerRegistration rateLog
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: action:register|beat|unpark|leave worker_id heartbeat_timeout_ms grace_ms [info]
-- worker_id: for register, its token ('0': none), which names K_WORKER_REGISTRATION (a minute,
-- or until the worker leaves): a registration re-sent after its reply was lost (by the client,
-- or a start that retries) answers the id the first one made, rather than register a second
-- worker that never beats. unpark (pause) and leave take the worker out of the parked set; a
-- hand-off left in the wake list with no parked worker to pop it goes back to its pending list.
-- info: register only, what getWorkers() shows of it (JSON: host, pid, name, concurrency),
-- stored with the registration's time until the worker leaves or is reclaimed. grace_ms:
-- register only (0: none), the registration is also the worker's first bridge beat
-- (heartbeat.lua): it counts that much into the future, covering its heartbeat thread's start.
-- Returns: the worker id for register, 1 otherwise.
local action, wid, hb_timeout = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = now_ms()
if action == 'register' then
  -- Re-sent (its token, ARGV[2], names K_WORKER_REGISTRATION): the first one's id, while that
  -- worker is registered.
  local first = wid ~= '0' and rcall('GET', K_WORKER_REGISTRATION)
  if first and rcall('HEXISTS', K_WORKER_INFO, first) == 0 then
    first = nil
  end
  wid = first or int(rcall('INCR', K_WORKER_ID_COUNTER))
  beat(wid, now, hb_timeout)
  local grace = tonumber(ARGV[4])
  if grace > 0 then
    rcall('ZADD', K_WORKERS, 'GT', now + grace, wid)
  end
  if not first then
    rcall('HSET', K_WORKER_INFO, wid, now .. ':' .. (ARGV[5] or '{}'))
    if ARGV[2] ~= '0' then
      rcall('SET', K_WORKER_REGISTRATION, wid, 'PX', 60000)
    end
  end
  return wid
elseif action == 'beat' then
  beat(wid, now, hb_timeout)
  return 1
end
rcall('ZREM', K_PARKED, wid)
unhand_if_none_parked(now)
if action == 'unpark' then
  return 1
end
-- 'leave': the worker released or finished its jobs; hand-offs it never received (its wait was
-- cut) go back first in line; forget it, its lease set and its hand-off list.
local taken = worker_handoffs()
for i = #taken, 1, -1 do
  if hand_live(taken[i]) then
    unhand(taken[i], false)
  end
end
-- (A plain wake-up its wait took is passed on to another worker.)
if rcall('LLEN', K_WORKER_HANDOFFS) > #taken then
  wake()
end
rcall('DEL', K_WORKER_HANDOFFS, K_WORKER_REGISTRATION)
rcall('ZREM', K_WORKERS, wid)
note_left(wid, now)
rcall('HDEL', K_WORKER_INFO, wid)
rcall('DEL', K_WORKER_LEASES)
return 1
