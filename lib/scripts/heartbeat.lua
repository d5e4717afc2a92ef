-- heartbeat: one beat of a worker, sent every heartbeat interval by the process's shared heartbeat
-- thread (lib/worker/heartbeat-thread.ts), or from the main thread until that thread's first beat
-- (lib/worker/heartbeat.ts). Also drops from the worker's lease set the jobs it no longer holds: a
-- leased job that was cancelled, completed by a stale holder or reclaimed leaves its seq there
-- (those scripts cannot name the holder's set), and the set would otherwise grow for the
-- worker's lifetime. O(jobs in the set): at most its concurrency plus prefetch, plus those few.
--! keys: leaseHolders workers heartbeatRecord workerLeases
--! argv: worker_id heartbeat_timeout_ms [grace_ms]
-- grace_ms: a bridge beat's start-up grace (see below).
-- Returns: 1; 0 for a worker that left (a beat sent before its leave that landed after it: it
-- writes nothing of the worker).
local wid = ARGV[1]
local now = now_ms()
if not beat(wid, now, tonumber(ARGV[2])) then
  return 0
end
-- A bridge beat (from the main thread, before the heartbeat thread's first) counts `grace` ms
-- into the future, never lowering a score: the thread's start-up is covered even if the main
-- thread blocks right after it. The thread's own beats (no grace) bring the score back to now.
local grace = tonumber(ARGV[3])
if grace then
  rcall('ZADD', K_WORKERS, 'GT', now + grace, wid)
end
local held = rcall('SMEMBERS', K_WORKER_LEASES)
if #held > 0 then
  local tokens = hmget(K_LEASE_HOLDERS, held)
  local gone = {}
  for i, seq in ipairs(held) do
    if not held_by(tokens[i], wid) then
      gone[#gone + 1] = seq
    end
  end
  rcall_each('SREM', K_WORKER_LEASES, gone)
end
return 1
