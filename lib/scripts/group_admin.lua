-- group_admin: pause, resume and limit one group, list the groups, drain a group's pending jobs
-- (docs/groups.md; the state: lib/scripts/lib/groups.lua). Group '' stands for the queue's
-- defaults in `conc` and `rate` (the `groups` queue option).
--! keys: data dataBuckets meta callerIds delayed leased leaseHolders dead progress wake waitingChildren flowParent flowOutbox flowOutboxAt flowCancels addedTimes jobLogs noticeChannel eventLog
--! keys: groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: action:pause group | action:resume group | action:conc group concurrency
--! argv: | action:rate group max duration_ms | action:list offset limit
--! argv: | action:drain group limit
-- pause  -> 1 (the group starts no job until resumed; its running jobs finish; workers give back
--           its prefetched jobs: 'gp:<group>' on the notice channel)
-- resume -> 1 when it was paused, else 0
-- conc   -> 1 (concurrency 0 removes the group's own; for '' the default)
-- rate   -> 1 (max 0 removes the group's own rate limit; for '' the default)
-- list   -> flat, per group (by name): group, pending, running, paused 1|0, held by its rate limit
--           (or a RateLimitError) until ms (0: not held)
-- drain  -> { jobs removed, entries looked at (call until fewer than `limit` were looked at), 10
--           when flow jobs were among them (their notices wait for delivery), else 0 }
local action = ARGV[1]
if action == 'list' then
  local offset, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
  local now = now_ms()
  local out = {}
  for _, g in ipairs(rcall('ZRANGE', K_GROUPS, offset, offset + limit - 1)) do
    local held = tonumber(rcall('ZSCORE', K_GROUPS_LIMITED, g)) or 0
    out[#out + 1] = g
    out[#out + 1] = rcall('ZCARD', group_key(g))
    out[#out + 1] = tonumber(rcall('HGET', K_GROUP_RUNNING, g)) or 0
    out[#out + 1] = rcall('SISMEMBER', K_GROUPS_PAUSED, g)
    out[#out + 1] = held > now and math.floor(held) or 0
  end
  return out
end
local g = ARGV[2]
if action == 'drain' then
  local seqs = rcall('ZRANGE', group_key(g), 0, tonumber(ARGV[3]) - 1)
  local metas = hmget(K_META, seqs)
  local removed, ended, ended_metas = 0, {}, {}
  for i, seq in ipairs(seqs) do
    if data_has(seq) then
      flow_job_ended(seq, decode_meta(metas[i]), 'x', 'cancelled (group drained)', nil)
      destroy(seq, decode_meta(metas[i]))
      removed = removed + 1
      ended[removed], ended_metas[removed] = seq, metas[i]
    end
    -- An entry destroy() did not take out (no data, or meta without the group) goes too.
    rcall('ZREM', group_key(g), seq)
  end
  -- A 'cancelled' event each (waitForResult, QueueEvents), as cancel() logs.
  emit_jobs('cancelled', ended, ended_metas)
  group_tidy(g)
  return { removed, #seqs, flow_wrote() }
elseif action == 'pause' then
  rcall('SADD', K_GROUPS_PAUSED, g)
  rcall('ZREM', K_GROUPS_READY, g)
  rcall('ZADD', K_GROUPS, 0, g)
  -- Workers give back the jobs of the group they prefetched (lib/worker/events-channel.ts).
  rcall('PUBLISH', K_NOTICE_CHANNEL, 'gp:' .. g)
  return 1
elseif action == 'resume' then
  local was = rcall('SREM', K_GROUPS_PAUSED, g)
  if group_refresh(g, nil) then
    wake()
  end
  group_tidy(g)
  return was
end
-- conc / rate: the group's own limits (JSON, see limits_decode), one field changed.
local limits = limits_decode(rcall('HGET', K_GROUP_LIMITS, g))
if action == 'conc' then
  limits.c = tonumber(ARGV[3]) > 0 and tonumber(ARGV[3]) or nil
else
  local max = tonumber(ARGV[3])
  limits.m = max > 0 and max or nil
  limits.d = max > 0 and tonumber(ARGV[4]) or nil
end
if next(limits) then
  rcall('HSET', K_GROUP_LIMITS, g, cjson.encode(limits))
else
  rcall('HDEL', K_GROUP_LIMITS, g)
end
if g ~= '' and group_refresh(g, nil) then
  wake()
elseif g == '' then
  -- The defaults changed: the groups held by a rate limit look again (those with rules of their
  -- own keep their holds: group_refresh computes the same).
  local any = false
  for _, h in ipairs(rcall('ZRANGE', K_GROUPS_LIMITED, 0, -1)) do
    if group_refresh(h, nil) then
      any = true
    end
  end
  if any then
    wake()
  end
end
return 1
