-- move_to_delayed: a handler threw DelayedError (a step job waits for its next step): its job
-- goes back to the delayed set, due at `schedule`, without counting an attempt; its data stays
-- as the handler last updated it (update_data.lua). A grouped job's run ends (its group's next job
-- may start; it joins the back of its group when due, as a retry does).
--! keys: delayed leased leaseHolders workerLeases meta wake jobLogs eventLog
--! keys: groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups
--! argv: seq token worker_id schedule max_log_lines logs
-- schedule: 'd<ms>' a delay from now, 'a<ms>' an absolute Redis time (not in the future: due at
-- once, promoted by the next lease); logs: the attempt's last log lines (logs_apply,
-- lib/scripts/lib/history.lua), '' = none.
-- Returns: { 1, due ms }, or E_LEASE_LOST when the caller does not hold the lease (nothing
--   changed). A re-send of a call that ran (its reply lost) answers { 1, due } (or Redis now once
--   promoted) and does nothing again, as fail.lua does (meta f).
local seq, token, wid, sched = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if rcall('HGET', K_LEASE_HOLDERS, seq) ~= token .. ':' .. wid then
  if ended_run(decode_meta(rcall('HGET', K_META, seq)), token) == '1' then
    return { 1, tonumber(rcall('ZSCORE', K_DELAYED, seq)) or now_ms() }
  end
  return E_LEASE_LOST
end
local now = now_ms()
local due = tonumber(string.sub(sched, 2))
if string.sub(sched, 1, 1) == 'd' then
  due = now + due
end
due = math.max(due, now)
local meta = decode_meta(rcall('HGET', K_META, seq))
-- It ran to its end without killing its worker: no longer a suspect.
meta.s = nil
meta.k = wid -- processedBy
end_run(meta, token, '1')
logs_apply(ARGV[6], tonumber(ARGV[5]), function()
  return meta
end)
save_meta(seq, meta)
rcall('ZREM', K_LEASED, seq)
rcall('HDEL', K_LEASE_HOLDERS, seq)
lease_unpad()
if wid ~= '0' then
  rcall('SREM', K_WORKER_LEASES, seq)
end
if meta.g then
  group_run_ended(meta.g, now)
end
schedule({ due, seq })
emit('delayed', meta.i or seq, ev_group(meta))
return { 1, due }
