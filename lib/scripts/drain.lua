-- drain: remove up to `limit` waiting jobs (pending: the ungrouped lists, then the groups by name;
-- then delayed when asked); leased jobs stay. One page per call: the caller calls again, from the
-- group it returns, until a call finds fewer than `limit` entries and no group is left.
--! keys: pending data dataBuckets meta callerIds delayed leased leaseHolders dead progress waitingChildren flowParent flowOutbox flowOutboxAt flowCancels addedTimes jobLogs eventLog
--! keys: wake groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: limit with_delayed after
-- with_delayed: 1 = delayed jobs too; after: '' to start (the ungrouped lists, then the groups),
-- else where the previous call said to go on in the groups.
-- Returns: { jobs removed, entries looked at (pending entries incl. cancelled ones, delayed),
--   where to go on in the groups ('' = start again: done when fewer than `limit` were looked
--   at), 10 when flow jobs were among them (their notices wait for delivery), else 0 }.
local limit, with_delayed, after = tonumber(ARGV[1]), ARGV[2] == '1', ARGV[3]
local removed, seen = 0, 0
-- The removed jobs and their metas: a 'cancelled' event each (waitForResult, QueueEvents).
local ended, ended_metas = {}, {}
-- (`g`: the group the seqs wait in; an entry destroy() did not take out, e.g. without data, goes.)
local function remove(seqs, g)
  local metas = hmget(K_META, seqs)
  local datas = data_mget(seqs)
  for i, seq in ipairs(seqs) do
    if datas[i] then
      flow_job_ended(seq, decode_meta(metas[i]), 'x', 'cancelled (queue drained)', nil)
      destroy(seq, decode_meta(metas[i]))
      removed = removed + 1
      ended[removed], ended_metas[removed] = seq, metas[i]
    end
    if g then
      rcall('ZREM', group_key(g), seq)
    end
  end
  seen = seen + #seqs
end
if after == '' then
  for p = 0, 9 do
    if seen >= limit then
      break
    end
    local got = rcall('LPOP', pending_key(p), limit - seen)
    if got then
      remove(got)
    end
  end
end
-- Groups in name order, from `from` (a ZRANGE BYLEX bound); `cursor`: after the last one emptied.
local from = after == '' and '-' or after
local left = ''
if seen < limit then
  local cursor = from
  local groups = rcall('ZRANGE', K_GROUPS, from, '+', 'BYLEX', 'LIMIT', 0, limit)
  for _, g in ipairs(groups) do
    local want = limit - seen
    if want <= 0 then
      break
    end
    local got = rcall('ZRANGE', group_key(g), 0, want - 1)
    if #got > 0 then
      remove(got, g)
    end
    if #got == want and rcall('EXISTS', group_key(g)) == 1 then
      break
    end
    cursor = '(' .. g
  end
  if #groups == limit or seen >= limit then
    left = cursor
  end
end
if with_delayed and seen < limit and left == '' then
  local got = rcall('ZRANGE', K_DELAYED, 0, limit - seen - 1)
  if #got > 0 then
    remove(got)
  end
end
emit_jobs('cancelled', ended, ended_metas)
return { removed, seen, left, flow_wrote() }
