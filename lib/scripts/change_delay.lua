-- change_delay: give a waiting job (pending or delayed) a new due time. A pending job due in the
-- future leaves its list (LREM, O(length of its list)) or its group for the delayed set (where a
-- grouped job comes due back into its group); one due now stays
-- where it is. A delayed job gets the new due time, at the earliest now (then the next lease
-- promotes it: a schedule tick is checked as when it comes due, but its missed window no longer
-- applies: the caller chose its time).
--! keys: pending data meta callerIds delayed leased dead completedJobs wake eventLog waitingChildren
--! keys: groupPending groupsReady groupRunning groupsPaused groups groupedPending
--! argv: id schedule
-- schedule: 'd<ms>' a delay from now, 'a<ms>' an absolute Redis time.
-- Returns: { 1, due ms } changed, or { 0 } no such job, { 2 } leased, { 3 } completed (a kept
--   job), { 4 } dead-lettered, { 5 } a parent waiting for its children. Nothing changes unless 1.
local seq = resolve(ARGV[1])
if not seq then
  return { kept_job(ARGV[1]) and 3 or 0 }
end
if rcall('ZSCORE', K_LEASED, seq) then
  return { 2 }
end
if rcall('ZSCORE', K_DEAD, seq) then
  return { 4 }
end
if rcall('ZSCORE', K_WAITING_CHILDREN, seq) then
  return { 5 }
end
local now = now_ms()
local sched = ARGV[2]
local due = tonumber(string.sub(sched, 2))
if string.sub(sched, 1, 1) == 'd' then
  due = now + due
end
due = math.max(due, now)
local meta = decode_meta(rcall('HGET', K_META, seq))
if not rcall('ZSCORE', K_DELAYED, seq) then
  if due == now then
    return { 1, due }
  end
  if meta.g then
    if not group_take(seq, meta) then
      return { 0 }
    end
    group_tidy(meta.g)
  elseif rcall('LREM', pending_key(prio_of(meta)), 1, seq) == 0 then
    return { 0 }
  end
end
if meta.z then
  meta.z = nil
  save_meta(seq, meta)
end
schedule({ due, seq })
emit('delayed', meta.i or seq, ev_group(meta))
return { 1, due }
