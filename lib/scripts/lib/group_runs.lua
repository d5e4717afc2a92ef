-- Groups (lib/scripts/lib/groups.lua): a grouped job's run ends (its group may start another),
-- it leaves its group (taken, destroyed) or its handler holds its group (RateLimitError).

-- Jobs of groups `gs` (a name per job) left the leased set: their runs ended. A group that was
-- not ready may be now (room freed: a worker is woken); one with nothing left is forgotten.
-- Returns true when one of them became ready.
local function group_runs_ended(gs, now)
  if #gs == 0 then
    return false
  end
  local n, names = {}, {}
  for _, g in ipairs(gs) do
    if not n[g] then
      n[g] = 0
      names[#names + 1] = g
    end
    n[g] = n[g] + 1
  end
  local running = hmget(K_GROUP_RUNNING, names)
  local set, idle, now_idle = {}, {}, {}
  for i, g in ipairs(names) do
    local left = count_of(running[i]) - n[g]
    if left > 0 then
      set[#set + 1] = g
      set[#set + 1] = count_str(left)
    else
      idle[#idle + 1] = g
      now_idle[g] = true
    end
  end
  rcall_each('HSET', K_GROUP_RUNNING, set)
  rcall_each('HDEL', K_GROUP_RUNNING, idle)
  local became = false
  for i = 1, #names, CHUNK do
    local part = { unpack(names, i, math.min(i + CHUNK - 1, #names)) }
    local scores = rcall('ZMSCORE', K_GROUPS_READY, unpack(part))
    for j, g in ipairs(part) do
      if not scores[j] then
        if group_refresh(g, now) then
          became = true
        else
          group_tidy(g)
        end
      elseif now_idle[g] then
        -- Still in the ready set, as a lease round leaves the groups it served (their next
        -- job's look is the next round's): with nothing pending any more, it is forgotten now,
        -- not at the next lease call (getGroups lists it until then).
        group_tidy(g)
      end
    end
  end
  if became then
    wake()
  end
  return became
end

-- The run of a job of group g ended (see group_runs_ended).
local function group_run_ended(g, now)
  return group_runs_ended({ g }, now)
end

-- Take pending grouped job seq out of its group; true when it was there.
local function group_take(seq, meta)
  if rcall('ZREM', group_key(meta.g), seq) == 0 then
    return false
  end
  group_count(prio_of(meta), -1)
  return true
end

-- Grouped job seq stops existing (destroy): out of its group's pending jobs, or its run ends if
-- it is leased.
local function group_unplace(seq, meta)
  if group_take(seq, meta) then
    group_tidy(meta.g)
  elseif rcall('ZSCORE', K_LEASED, seq) then
    group_run_ended(meta.g, nil)
  end
end

-- A handler of grouped job seq (its lease just removed) said the remote side wants its group to
-- wait `hold_ms` (RateLimitError): the group starts nothing until then (other groups go on); the
-- job goes back in front of its group. Returns until when (Redis ms).
local function group_rate_limited(seq, meta, hold_ms)
  local now = now_ms()
  -- (+ 0.5: a RateLimitError's hold, which group_refresh keeps; a rate limit's is whole ms.)
  local until_ms = now + hold_ms
  rcall('ZADD', K_GROUPS_LIMITED, 'GT', until_ms + 0.5, meta.g)
  group_run_ended(meta.g, now)
  group_requeue(seq, meta, true, now)
  return math.floor(tonumber(rcall('ZSCORE', K_GROUPS_LIMITED, meta.g)))
end
