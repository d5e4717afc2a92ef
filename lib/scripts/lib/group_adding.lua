-- Groups in the add scripts (add.lua; docs/groups.md): grouped jobs placed in their groups,
-- and a grouped job handed off to a parked worker only when its group could start it now.

-- Note grouped job seq (priority prio) for group_push, in order.
local function group_pend(gpend, g, prio, seq)
  local z = gpend[g]
  if not z then
    z = {}
    gpend[g] = z
    gpend[#gpend + 1] = g
  end
  z[#z + 1] = int(tonumber(prio) * GROUP_SPAN + tonumber(seq))
  z[#z + 1] = seq
end

-- Place the noted grouped jobs in their groups. True when one of those groups is ready, or its
-- rate limit holds it from this add on (its last start, e.g. a hand-off, used the window up):
-- a parked worker, which learnt of no hold, is woken, and its lease call tells it when.
local function group_push(gpend, now)
  local wake_up = false
  for _, g in ipairs(gpend) do
    local ready, newly_held = group_place(g, gpend[g], now)
    wake_up = wake_up or ready or newly_held
  end
  return wake_up
end

-- Whether a new job of group g may be handed off to a parked worker at `now`: nothing of the
-- group waits before it (`gpend`: the grouped jobs its add call placed before it), the group is
-- not paused nor held, and its limits allow one more start.
local function group_may_hand(g, gpend, now)
  if gpend[g] or rcall('EXISTS', group_key(g)) == 1 then
    return false
  end
  if rcall('SISMEMBER', K_GROUPS_PAUSED, g) == 1 then
    return false
  end
  if (tonumber(rcall('ZSCORE', K_GROUPS_LIMITED, g)) or 0) > now then
    return false
  end
  local rule = group_rules({ g })[g]
  if not (rule.c or rule.m) then
    return true
  end
  return group_room(g, rule, tonumber(rcall('HGET', K_GROUP_RUNNING, g)) or 0, now) > 0
end

-- A job of group g was leased to be handed off (lease token `token`): it runs in its group.
local function group_handed(g, token, now)
  rcall('HINCRBY', K_GROUP_RUNNING, g, 1)
  rcall('ZADD', K_GROUPS, 0, g)
  local rule = group_rules({ g })[g]
  if rule.m then
    group_log(g, { token }, now, rule.d)
  end
end
