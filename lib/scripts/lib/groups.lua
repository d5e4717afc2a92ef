-- Groups (docs/groups.md): fair leasing across groups, per-group concurrency and rate limits.
-- A grouped job (meta g) waits in its group's zset gp:<group> (K_GROUP_PENDING prefix), never in
-- a pending list: member its seq, score prio·GROUP_SPAN + its place in line (its seq when new
-- or put back in front, a fresh seq counter value when put at the back). A group is in the
-- ready set K_GROUPS_READY when it has pending jobs, is not paused and its limits let it start
-- one more job now; its score is its head's prio·GROUP_SPAN + GROUP_TURNS + its turn (from
-- K_GROUP_TURN_COUNTER; a score below GROUP_TURNS puts a group first in line). Leasing takes
-- the lowest score, one job per group per turn (group_pop in lib/scripts/lib/group_leasing.lua),
-- so a group's backlog delays another group by at most one turn. The ready score's priority may lag
-- behind a group's head (leasing assumes the next job has the priority of the one it took, and
-- corrects itself when it meets a lower one); a group left empty in the ready set goes at its
-- next turn. K_GROUPS_LIMITED holds the groups waiting for their rate limit (or a
-- RateLimitError: its hold ends in .5 ms, one a refresh keeps; a rate limit's is computed again
-- from the group's rule, so a changed limit applies at once) until then; K_GROUP_RUNNING counts each group's jobs in the leased set
-- (hand-offs included); K_GROUPS lists the groups with pending, running or paused state;
-- K_GROUPED_PENDING counts grouped pending jobs per priority (counts()); K_GROUP_LIMITS holds
-- each group's own limits and, under '', the queue's defaults (`groups` option).

local GROUP_SPAN = 1e15

local GROUP_TURNS = 1e5

-- A ready score: priority `prio`, turn `turn`, as an integer string (a Lua number would go to
-- Redis formatted with %.17g, per member: far slower).
local function group_score(prio, turn)
  return int(prio * GROUP_SPAN + GROUP_TURNS + turn)
end

-- K_GROUP_RUNNING keeps a field '' (no group's name) with a value longer than Redis's
-- hash-max-listpack-value (64 by default), so that the hash stays a hash table: a field is then
-- found in O(1), not by scanning a listpack of up to 128 fields (the running counts of ~80
-- groups are read and written at each lease and completion of ~80 jobs: ~3% of a grouped job's
-- Redis instructions). Set by each grouped lease; readers of the hash skip ''.
local RUNNING_PAD = string.rep('.', 80)

-- A running count as stored (nil or false: 0), a one-digit one without tonumber (~1-2k
-- instructions with its strtod; a one-digit count is the common case).
local function count_of(v)
  if not v then
    return 0
  end
  if #v == 1 then
    return string.byte(v) - 48
  end
  return tonumber(v) or 0
end

-- Count n (an integer) as a string, a one-digit one without string.format (~1-2k instructions).
local function count_str(n)
  if n >= 0 and n < 10 then
    return string.char(48 + n)
  end
  return int(n)
end

-- The priority of a pending job from its score as Redis replies it: scores are integers, which
-- %.17g prints as their digits (16 from priority 1, whose first digit it is), without tonumber's
-- strtod; any other form (an exponent) is parsed.
local function score_prio(s)
  local n = #s
  if n <= 16 and not string.find(s, 'e', 1, true) then
    return n == 16 and string.byte(s) - 48 or 0
  end
  return math.floor(tonumber(s) / GROUP_SPAN)
end

-- A group's pending zset.
local function group_key(g)
  return K_GROUP_PENDING .. ':' .. g
end

-- A group's rate log.
local function group_rate_key(g)
  return K_GROUP_RATE .. ':' .. g
end

-- Add `n` to the grouped pending count of priority p (the field goes at 0).
local function group_count(p, n)
  if rcall('HINCRBY', K_GROUPED_PENDING, p, n) <= 0 then
    rcall('HDEL', K_GROUPED_PENDING, p)
  end
end

-- Limits as stored (JSON: c concurrency, m rate max per d ms), sane fields only.
local function limits_decode(raw)
  local t = {}
  if not raw then
    return t
  end
  local ok, v = pcall(cjson.decode, raw)
  if ok and type(v) == 'table' then
    for _, f in ipairs({ 'c', 'm', 'd' }) do
      local n = v[f]
      if type(n) == 'number' and n >= 1 and n % 1 == 0 then
        t[f] = n
      end
    end
    if not (t.m and t.d) then
      t.m, t.d = nil, nil
    end
  end
  return t
end

-- The limits of groups `gs`: per group { c, m, d }, its own over the queue's defaults.
local function group_rules(gs)
  local fields = { '' }
  for i, g in ipairs(gs) do
    fields[i + 1] = g
  end
  local raw = hmget(K_GROUP_LIMITS, fields)
  local def = limits_decode(raw[1])
  local out = {}
  for i, g in ipairs(gs) do
    local own = limits_decode(raw[i + 1])
    local r = { c = own.c or def.c, m = def.m, d = def.d }
    if own.m then
      r.m, r.d = own.m, own.d
    end
    out[g] = r
  end
  return out
end

-- How many more jobs group g may start at `now` under `rule` with `running` leased (1e9: no
-- limit binds), and when its rate limit lets it start the next once that room is used, when
-- the rate limit is what binds (0: it is not).
local function group_room(g, rule, running, now)
  local room = rule.c and rule.c - running or 1e9
  local at = 0
  if rule.m then
    local key = group_rate_key(g)
    rcall('ZREMRANGEBYSCORE', key, '-inf', now - rule.d)
    local n = rcall('ZCARD', key)
    if rule.m - n <= room then
      room = rule.m - n
      local oldest = n > 0 and tonumber(rcall('ZRANGE', key, 0, 0, 'WITHSCORES')[2]) or now
      at = oldest + rule.d
    end
  end
  return math.max(room, 0), at
end

-- Record lease starts (tokens) of group g at `now` in its rate log (window `d` ms).
local function group_log(g, tokens, now, d)
  local key = group_rate_key(g)
  local z = {}
  for _, t in ipairs(tokens) do
    z[#z + 1] = now
    z[#z + 1] = t
  end
  rcall_each('ZADD', key, z)
  rcall('PEXPIRE', key, d)
end

-- Put group g in the ready set or take it out, as its state says (see above); `now`: Redis time
-- (read here when nil and needed). A group whose rate limit binds goes to the limited set until
-- its next start is allowed. Returns true when it is ready; else false, and true when its rate
-- limit holds it from this refresh on (it was not held before: see group_push).
local function group_refresh(g, now)
  local head = rcall('ZRANGE', group_key(g), 0, 0, 'WITHSCORES')
  local score = rcall('ZSCORE', K_GROUPS_READY, g)
  local ready = head[1] ~= nil and rcall('SISMEMBER', K_GROUPS_PAUSED, g) == 0
  local was_held, newly_held = false, false
  if ready then
    local hold = tonumber(rcall('ZSCORE', K_GROUPS_LIMITED, g))
    if hold then
      now = now or now_ms()
      was_held = hold > now
      if hold > now and hold % 1 ~= 0 then
        ready = false -- a RateLimitError's (group_rate_limited)
      else
        -- Over, or its rate limit's: that one is computed again below, by the rule as it is now.
        rcall('ZREM', K_GROUPS_LIMITED, g)
      end
    end
  end
  if ready then
    local rule = group_rules({ g })[g]
    if rule.c or rule.m then
      now = now or now_ms()
      local running = tonumber(rcall('HGET', K_GROUP_RUNNING, g)) or 0
      local room, at = group_room(g, rule, running, now)
      if room == 0 then
        ready = false
        if at > 0 then
          rcall('ZADD', K_GROUPS_LIMITED, 'GT', at, g)
          newly_held = not was_held
        end
      end
    end
  end
  if not ready then
    if score then
      rcall('ZREM', K_GROUPS_READY, g)
    end
    return false, newly_held
  end
  local prio = math.floor(tonumber(head[2]) / GROUP_SPAN)
  if not score then
    local turn = rcall('INCR', K_GROUP_TURN_COUNTER)
    rcall('ZADD', K_GROUPS_READY, group_score(prio, turn), g)
  elseif math.floor(tonumber(score) / GROUP_SPAN) ~= prio then
    -- Its head's priority changed: same turn, at that priority.
    rcall('ZADD', K_GROUPS_READY, int(prio * GROUP_SPAN + tonumber(score) % GROUP_SPAN), g)
  end
  return true
end

-- Forget group g (listing, running count, ready set) once nothing of it is pending, running or
-- paused.
local function group_tidy(g)
  if
    rcall('EXISTS', group_key(g)) == 0
    and (tonumber(rcall('HGET', K_GROUP_RUNNING, g)) or 0) <= 0
    and rcall('SISMEMBER', K_GROUPS_PAUSED, g) == 0
  then
    rcall('ZREM', K_GROUPS, g)
    rcall('HDEL', K_GROUP_RUNNING, g)
    rcall('ZREM', K_GROUPS_READY, g)
  end
end

-- Place jobs in group g: `z` is { score, seq, ... } (jobs in no other place), then refresh the
-- group. Returns what group_refresh does (ready; else whether its rate limit newly holds it).
local function group_place(g, z, now)
  rcall_each('ZADD', group_key(g), z)
  local per = {}
  for i = 1, #z, 2 do
    local p = math.floor(tonumber(z[i]) / GROUP_SPAN)
    per[p] = (per[p] or 0) + 1
  end
  for p = 0, 9 do
    if per[p] then
      group_count(p, per[p])
    end
  end
  rcall('ZADD', K_GROUPS, 0, g)
  return group_refresh(g, now)
end

-- Put grouped job seq (in no other place) back in its group: in `front`, at its place in add
-- order, or at the back (a fresh seq counter value). Returns true when its group is ready.
local function group_requeue(seq, meta, front, now)
  local place = front and tonumber(seq) or rcall('INCR', K_SEQ_COUNTER)
  return group_place(meta.g, { int(prio_of(meta) * GROUP_SPAN + place), seq }, now)
end
