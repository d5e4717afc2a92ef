-- flow_ack: what was delivered (docs/internals/flows.md). delivered: notices of this queue's
-- children that reached their parents; each is kept recheck_ms more and then delivered once
-- again (flow_due.lua), in case the parent's Redis lost the first delivery in a failover, then
-- dropped. rechecked: notices delivered that second time: dropped (unless the job wrote a new
-- one meanwhile). cancels: children of this queue's parents that were cancelled or had ended
-- (done) and those still running (cancelled when their run ends: looked at again later).
--! keys: flowOutbox flowOutboxAt flowRechecks flowCancels
--! argv: action:delivered recheck_ms count seqs*count | action:rechecked count seqs*count
--! argv: | action:cancels done_count members...
-- members: '<queue>:<seq>' of K_FLOW_CANCELS, those done first.
-- Returns: nothing.
local action = ARGV[1]
if action == 'delivered' then
  local recheck_at = now_ms() + tonumber(ARGV[2])
  for j = 4, 3 + tonumber(ARGV[3]) do
    if rcall('ZREM', K_FLOW_OUTBOX_AT, ARGV[j]) == 1 then
      rcall('ZADD', K_FLOW_RECHECKS, recheck_at, ARGV[j])
    end
  end
elseif action == 'rechecked' then
  for j = 3, 2 + tonumber(ARGV[2]) do
    if rcall('ZREM', K_FLOW_RECHECKS, ARGV[j]) == 1 and not rcall('ZSCORE', K_FLOW_OUTBOX_AT, ARGV[j]) then
      rcall('HDEL', K_FLOW_OUTBOX, ARGV[j])
    end
  end
else
  local done = tonumber(ARGV[2])
  local now = now_ms()
  for j = 3, #ARGV do
    if j < 3 + done then
      rcall('ZREM', K_FLOW_CANCELS, ARGV[j])
    else
      rcall('ZADD', K_FLOW_CANCELS, 'XX', now, ARGV[j])
    end
  end
end
return 0
