-- list_jobs: one page of the jobs in one state, in the order the queue takes them. O(page).
--! keys: pending data meta delayed leased leaseHolders dead progress waitingChildren groupPending groups completedJobs completedInfo addedTimes
--! argv: state:pending|delayed|leased|dead|waiting-children|completed offset limit [group]
-- Pending: the lists p0..p9 one after the other (lease order), then each group's pending jobs
-- (in its order), the groups by name (skipping groups before the page costs a ZCARD each);
-- positions count stored entries, and the entry a cancelled job leaves in a list until a lease
-- drops it is skipped (the page is then shorter). With `group`: only that group's pending jobs,
-- O(log + page). Delayed by due time, leased by deadline, dead by time of death (oldest first),
-- flow parents waiting for children by the time they were added, completed (the kept ones,
-- keepCompleted) newest first (completed_page).
-- Returns: flat, per job: seq, payload, meta, score (due / deadline / died / waiting since /
--   finished ms, '' for pending), progress ('' = none), added ms, started ms (0: not known),
--   holder (leased: '<token>:<worker id>'; completed: its info '<worker id>:<attempts
--   made>[:<result>]'; else '').
local state, offset, limit, group = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local seqs, scores = {}, {}
-- Append the entries of group g from position `offset` (of those not yet skipped) to the page.
local function from_group(g)
  local len = rcall('ZCARD', group_key(g))
  if offset >= len then
    offset = offset - len
    return
  end
  for _, seq in ipairs(rcall('ZRANGE', group_key(g), offset, offset + limit - #seqs - 1)) do
    seqs[#seqs + 1] = seq
    scores[#seqs] = ''
  end
  offset = 0
end
if state == 'pending' and group then
  from_group(group)
elseif state == 'pending' then
  for p = 0, 9 do
    if #seqs >= limit then
      break
    end
    local len = rcall('LLEN', pending_key(p))
    if offset >= len then
      offset = offset - len
    else
      local got = rcall('LRANGE', pending_key(p), offset, offset + limit - #seqs - 1)
      offset = 0
      for _, seq in ipairs(got) do
        seqs[#seqs + 1] = seq
        scores[#seqs] = ''
      end
    end
  end
  local after = '-'
  while #seqs < limit do
    local groups = rcall('ZRANGE', K_GROUPS, after, '+', 'BYLEX', 'LIMIT', 0, 1000)
    for _, g in ipairs(groups) do
      if #seqs >= limit then
        break
      end
      from_group(g)
    end
    if #groups < 1000 then
      break
    end
    after = '(' .. groups[#groups]
  end
elseif state == 'completed' then
  seqs, scores = completed_page(offset, limit)
else
  local key = ({ delayed = K_DELAYED, leased = K_LEASED, dead = K_DEAD, ['waiting-children'] = K_WAITING_CHILDREN })[state]
  local got = rcall('ZRANGE', key, offset, offset + limit - 1, 'WITHSCORES')
  for i = 1, #got, 2 do
    -- (The leased set's pad, LEASE_PAD, is not a job: last by score, so only the last page of
    -- leased jobs can be one short.)
    if got[i] ~= LEASE_PAD then
      seqs[#seqs + 1] = got[i]
      -- (A waiting parent's score is its seq: no time to show.)
      scores[#seqs] = state == 'waiting-children' and '' or got[i + 1]
    end
  end
end
local out = {}
if #seqs == 0 then
  return out
end
local d, m, g = data_mget(seqs), hmget(K_META, seqs), hmget(K_PROGRESS, seqs)
local added, started = times_get(seqs)
local holders = {}
if state == 'leased' then
  holders = hmget(K_LEASE_HOLDERS, seqs)
elseif state == 'completed' then
  holders = hmget(K_COMPLETED_INFO, seqs)
end
for i, seq in ipairs(seqs) do
  if d[i] then
    out[#out + 1] = seq
    out[#out + 1] = d[i]
    out[#out + 1] = m[i] or ''
    out[#out + 1] = scores[i]
    out[#out + 1] = g[i] or ''
    out[#out + 1] = added[i]
    out[#out + 1] = started[i]
    out[#out + 1] = holders[i] or ''
  end
end
return out
