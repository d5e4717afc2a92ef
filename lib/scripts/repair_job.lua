-- repair_job: check one suspect job against every invariant and fix what is broken.
-- The client finds suspects by walking the queue incrementally (SCAN-family commands, see
-- repair() in lib/queue/repair.ts); this script re-checks atomically, so a job that moved
-- meanwhile is left alone.
-- Invariant: a job with a payload is in exactly one place (a pending list — for a grouped job
-- its group's pending zset —, the delayed set, the leased set with a lease token, the dead set,
-- waiting for its flow children, or the kept completed jobs with their info); nothing refers to
-- a job without one. A grouped job's lease counts in its group's running jobs: a lease taken away
-- here ends its run there.
--! keys: pending data meta callerIds delayed leased leaseHolders dead wake progress waitingChildren flowParent completedJobs completedInfo jobLogs
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: seq
-- Returns: '' when nothing was wrong, '~tombstone' when only entries of cancelled jobs were
--   dropped from pending lists (normal), else a short description of the fix.
local seq = ARGV[1]
local fixes = {}
local function fixed(what)
  fixes[#fixes + 1] = what
end
local has_data = data_has(seq)
local token = rcall('HGET', K_LEASE_HOLDERS, seq)
local leased = rcall('ZSCORE', K_LEASED, seq)
if not has_data then
  local gmeta = decode_meta(rcall('HGET', K_META, seq))
  if leased or token then
    rcall('ZREM', K_LEASED, seq)
    rcall('HDEL', K_LEASE_HOLDERS, seq)
    lease_unpad()
    if leased and gmeta.g then
      group_run_ended(gmeta.g, nil)
    end
    fixed('lease without payload')
  end
  if gmeta.g and group_take(seq, gmeta) then
    group_tidy(gmeta.g)
    fixed('group entry without payload')
  end
  if rcall('ZREM', K_DELAYED, seq) + rcall('ZREM', K_DEAD, seq) + rcall('ZREM', K_WAITING_CHILDREN, seq) + rcall('ZREM', K_COMPLETED_JOBS, seq) > 0 then
    fixed('entry without payload')
  end
  if rcall('HDEL', K_COMPLETED_INFO, seq) > 0 then
    fixed('completed info without payload')
  end
  if rcall('EXISTS', logs_key(seq), logs_key(seq) .. ':d') > 0 then
    logs_forget(seq)
    fixed('log without payload')
  end
  if rcall('HDEL', K_META, seq) + rcall('HDEL', K_PROGRESS, seq) > 0 then
    fixed('metadata without payload')
  end
  local removed = 0
  for p = 0, 9 do
    removed = removed + rcall('LREM', pending_key(p), 0, seq)
  end
  if removed > 0 and #fixes == 0 then
    -- Entries of cancelled jobs wait in their lists until a lease skips them: normal, not a fix.
    return '~tombstone'
  end
  return table.concat(fixes, '; ')
end
local meta = decode_meta(rcall('HGET', K_META, seq))
if leased and not token then
  rcall('ZREM', K_LEASED, seq)
  lease_unpad()
  leased = false
  if meta.g then
    group_run_ended(meta.g, nil)
  end
  fixed('lease without token')
elseif token and not leased then
  rcall('HDEL', K_LEASE_HOLDERS, seq)
  token = false
  fixed('token without lease')
end
local delayed = rcall('ZSCORE', K_DELAYED, seq)
local dead = rcall('ZSCORE', K_DEAD, seq)
local kept = rcall('ZSCORE', K_COMPLETED_JOBS, seq)
local info = rcall('HEXISTS', K_COMPLETED_INFO, seq) == 1
local in_group = meta.g ~= nil and rcall('ZSCORE', group_key(meta.g), seq) ~= false
local in_lists = 0
local where = {}
for p = 0, 9 do
  local c = #rcall('LPOS', pending_key(p), seq, 'COUNT', 0)
  if c > 0 then
    where[#where + 1] = { p, c }
    in_lists = in_lists + c
  end
end
local function unlist(keep_one)
  for i, w in ipairs(where) do
    local c = w[2]
    if keep_one and i == 1 then
      c = c - 1
    end
    if c > 0 then
      -- From the tail, so a kept entry keeps its place in line.
      rcall('LREM', pending_key(w[1]), -c, seq)
    end
  end
end
-- A flow parent waiting for its children: in no other place, and awaiting some.
if flow_repair_waiting(seq, meta, kept or leased or dead or delayed or in_lists > 0, fixed) then
  return table.concat(fixes, '; ')
end
-- Keep the most advanced place; drop the others.
if kept then
  if leased or delayed or dead or in_lists > 0 or in_group then
    fixed('completed job also queued elsewhere')
  end
  rcall('ZREM', K_LEASED, seq)
  rcall('HDEL', K_LEASE_HOLDERS, seq)
  lease_unpad()
  rcall('ZREM', K_DELAYED, seq)
  rcall('ZREM', K_DEAD, seq)
  unlist(false)
  if in_group then
    group_take(seq, meta)
    group_tidy(meta.g)
  end
  if leased and meta.g then
    group_run_ended(meta.g, nil)
  end
  if not info then
    rcall('HSET', K_COMPLETED_INFO, seq, '0:' .. ((meta.a or 0) + 1))
    fixed('completed job without its info')
  end
  return table.concat(fixes, '; ')
end
if info then
  rcall('HDEL', K_COMPLETED_INFO, seq)
  fixed('completed info of a job not kept')
end
if (leased or dead or delayed) and in_group then
  group_take(seq, meta)
  group_refresh(meta.g, nil)
  in_lists = in_lists + 1
end
if leased then
  if delayed or dead or in_lists > 0 then
    fixed('leased job also queued elsewhere')
  end
  rcall('ZREM', K_DELAYED, seq)
  rcall('ZREM', K_DEAD, seq)
  unlist(false)
elseif dead then
  if delayed or in_lists > 0 then
    fixed('dead job also queued elsewhere')
  end
  rcall('ZREM', K_DELAYED, seq)
  unlist(false)
elseif delayed then
  if in_lists > 0 then
    fixed('delayed job also pending')
  end
  unlist(false)
elseif meta.g then
  -- A grouped job waits in its group, never in a pending list.
  if in_lists > 0 then
    unlist(false)
    fixed('grouped job in a pending list')
  end
  if not in_group then
    requeue(seq, meta, false)
    wake()
    fixed('grouped job in no queue: requeued')
  end
elseif in_lists == 0 then
  requeue(seq, meta, false)
  wake()
  fixed('payload in no queue: requeued')
elseif in_lists > 1 then
  unlist(true)
  fixed('job pending ' .. in_lists .. ' times')
end
if meta.i and rcall('HGET', K_CALLER_IDS, meta.i) ~= seq then
  rcall('HSET', K_CALLER_IDS, meta.i, seq)
  fixed('caller id index restored')
end
return table.concat(fixes, '; ')
