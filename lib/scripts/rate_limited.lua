-- rate_limited: a handler said the remote side wants us to wait (RateLimitError): give its job
-- back to the FRONT without counting an attempt (logged 'released', as release.lua), and let the
-- queue lease nothing for hold_ms (a grouped job: its group only, see group_rate_limited).
--! keys: pending meta leased leaseHolders workerLeases flowControl eventLog
--! keys: seqCounter wake groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: seq token worker_id hold_ms held_count held(seq token)*held_count
-- held: the worker's prefetched jobs the limit holds (of the job's group; ungrouped: all), not
-- started: they go back to the front first, in their order, then the job before them (in the
-- same call: no lease takes them in between).
-- Returns: the time (Redis ms) until which the queue (or the job's group) leases nothing, or
--   E_LEASE_LOST when the lease was lost (then only the held jobs went back). A re-send of a
--   call that ran (its reply lost) answers the queue's hold (Redis now for a group's) and does
--   nothing again, as fail.lua does (meta f).
local seq, token, wid, hold_ms = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
release_leases(wid, tonumber(ARGV[5]), 6)
if rcall('HGET', K_LEASE_HOLDERS, seq) ~= token .. ':' .. wid then
  local meta = decode_meta(rcall('HGET', K_META, seq))
  if ended_run(meta, token) == '1' then
    return meta.g and now_ms() or tonumber(rcall('HGET', K_FLOW_CONTROL, 'u')) or now_ms()
  end
  return E_LEASE_LOST
end
rcall('ZREM', K_LEASED, seq)
rcall('HDEL', K_LEASE_HOLDERS, seq)
lease_unpad()
rcall('SREM', K_WORKER_LEASES, seq)
local meta = decode_meta(rcall('HGET', K_META, seq))
end_run(meta, token, '1')
save_meta(seq, meta)
emit_jobs('released', { seq })
if meta.g then
  return group_rate_limited(seq, meta, hold_ms)
end
requeue(seq, meta, true)
local until_ms = now_ms() + hold_ms
local u = tonumber(rcall('HGET', K_FLOW_CONTROL, 'u'))
if not u or u < until_ms then
  rcall('HSET', K_FLOW_CONTROL, 'u', until_ms)
  u = until_ms
end
return u
