-- The grouped branch of lease_jobs (lib/scripts/lib/leasing.lua; docs/groups.md): the round
-- robin across the ready groups, one job per group per turn; the group state is kept by
-- lib/scripts/lib/groups.lua.

-- The grouped lease's state for one lease call at `now`, or nil when no group is ready nor held
-- (then lease_jobs takes today's ungrouped path, at the cost of this one EXISTS). Groups whose
-- hold ended are refreshed first. `on`: some group is ready, so jobs are taken round robin (group_pop); the
-- ungrouped pending lists then take part as the ready member '' (from their highest priority).
local function group_lease_start(now)
  if rcall('EXISTS', K_GROUPS_READY, K_GROUPS_LIMITED) == 0 then
    return nil
  end
  for _, g in ipairs(rcall('ZRANGEBYSCORE', K_GROUPS_LIMITED, '-inf', now, 'LIMIT', 0, 100)) do
    rcall('ZREM', K_GROUPS_LIMITED, g)
    group_refresh(g, now)
  end
  local gl = { now = now, on = false, st = {}, sel = {}, sel_p = {}, sel_s = {}, ug = 10 }
  gl.limits = rcall('EXISTS', K_GROUP_LIMITS) == 1
  local n = rcall('ZCARD', K_GROUPS_READY)
  local us = rcall('ZSCORE', K_GROUPS_READY, '')
  if us then
    n = n - 1
  end
  local lists = {}
  for p = 0, 9 do
    lists[p + 1] = pending_key(p)
  end
  if n > 0 and rcall('EXISTS', unpack(lists)) > 0 then
    local p = 0
    while p < 9 and rcall('LLEN', pending_key(p)) == 0 do
      p = p + 1
    end
    gl.ug = p
    if not us then
      local turn = rcall('INCR', K_GROUP_TURN_COUNTER)
      rcall('ZADD', K_GROUPS_READY, group_score(p, turn), '')
    elseif math.floor(tonumber(us) / GROUP_SPAN) ~= p then
      rcall('ZADD', K_GROUPS_READY, int(p * GROUP_SPAN + tonumber(us) % GROUP_SPAN), '')
    end
  elseif us then
    rcall('ZREM', K_GROUPS_READY, '')
  end
  gl.on = n > 0
  return gl
end

-- The limits of a group without any (shared: read only).
local NO_RULE = {}

-- The limits, running count and room of the groups of a round not met before in this call.
local function group_load(gl, round)
  local new = {}
  for _, g in ipairs(round) do
    if not gl.st[g] then
      if g == '' then
        gl.st[g] = { room = 1e9, at = 0 }
      else
        new[#new + 1] = g
      end
    end
  end
  if #new == 0 then
    return
  end
  local rules = gl.limits and group_rules(new) or {}
  local running = hmget(K_GROUP_RUNNING, new)
  for i, g in ipairs(new) do
    local rule, run = rules[g] or NO_RULE, count_of(running[i])
    local room, at = 1e9, 0
    if rule.c or rule.m then
      room, at = group_room(g, rule, run, gl.now)
    end
    gl.st[g] = { rule = rule, running = run, raw = running[i], room = room, room0 = room, at = at }
  end
end

-- One job of the ungrouped pending lists (the ready member ''), highest priority first: its seq,
-- its priority and the priority of the next one (nil: none left), or nil.
local function group_pop_ungrouped(gl)
  for p = gl.ug, 9 do
    local seq = rcall('LPOP', pending_key(p))
    if seq then
      for q = p, 9 do
        if rcall('LLEN', pending_key(q)) > 0 then
          gl.ug = q
          return seq, p, q
        end
      end
      gl.ug = 10
      return seq, p, nil
    end
  end
  gl.ug = 10
  return nil
end

-- Pop up to `need` jobs round robin: the ready members of the lowest score's priority, one job
-- each, in turn order; each served member gets a new turn (the back of the round) while it may
-- start more. A hand-off first in line (see lease_jobs) comes first. Appends to popped/prios;
-- notes each job's group, priority and score in gl.sel, gl.sel_p, gl.sel_s (flat maps: no table
-- per job). Returns the need left and whether nothing is left.
local function group_pop(gl, need, hand, popped, prios)
  if hand and not hand.taken then
    hand.taken = true
    if hand_live(hand) then
      popped[#popped + 1] = hand.seq
      prios[#popped] = hand.p
      need = need - 1
    end
  end
  while need > 0 do
    -- The first member's score gives the round's priority; the round is read without scores (a
    -- score in a reply is formatted with %.17g and parsed back: ~5k instructions each).
    local head = rcall('ZRANGE', K_GROUPS_READY, 0, 0, 'WITHSCORES')
    if #head == 0 then
      return 0, true
    end
    local level = math.floor(tonumber(head[2]) / GROUP_SPAN)
    local round = { head[1] }
    if need > 1 then
      local bound = '(' .. int((level + 1) * GROUP_SPAN)
      round = rcall('ZRANGE', K_GROUPS_READY, '-inf', bound, 'BYSCORE', 'LIMIT', 0, need)
    end
    group_load(gl, round)
    local turn = rcall('INCRBY', K_GROUP_TURN_COUNTER, #round) - #round
    local zadd, zrem, gone = {}, {}, {}
    for i, g in ipairs(round) do
      local st = gl.st[g]
      local seq, p, nxt, keep = nil, nil, nil, nil
      if st.room <= 0 then
        if st.at > 0 then
          rcall('ZADD', K_GROUPS_LIMITED, 'GT', st.at, g)
        end
      elseif g == '' then
        seq, p, nxt = group_pop_ungrouped(gl)
      else
        local r = rcall('ZPOPMIN', group_key(g))
        local jp = r[1] and score_prio(r[2])
        if not r[1] then
          -- Empty (its last job went at an earlier turn): out of the ready set (below) and, with
          -- nothing running (read this call, none taken since), forgotten as group_tidy would
          -- (a ready group is not paused; batched per round).
          if st.room == st.room0 and st.running <= 0 then
            gone[#gone + 1] = g
            if st.raw then
              rcall('HDEL', K_GROUP_RUNNING, g)
            end
          end
        elseif jp > level then
          -- Its score was ahead of its head's priority: back, and the group at that priority.
          rcall('ZADD', group_key(g), r[2], r[1])
          local score = tonumber(rcall('ZSCORE', K_GROUPS_READY, g))
          keep = int(jp * GROUP_SPAN + score % GROUP_SPAN)
        else
          seq, p = r[1], jp
          gl.sel[seq], gl.sel_p[seq], gl.sel_s[seq] = g, p, r[2]
          -- Its next job is taken to have this priority (corrected when met, above).
          nxt = p
        end
      end
      if seq then
        popped[#popped + 1] = seq
        prios[#popped] = p
        st.room = st.room - 1
        need = need - 1
        if nxt and st.room > 0 then
          keep = group_score(nxt, turn + i)
        elseif nxt and st.at > 0 then
          rcall('ZADD', K_GROUPS_LIMITED, 'GT', st.at, g)
        end
      end
      if keep then
        zadd[#zadd + 1] = keep
        zadd[#zadd + 1] = g
      else
        zrem[#zrem + 1] = g
      end
    end
    rcall_each('ZREM', K_GROUPS_READY, zrem)
    rcall_each('ZADD', K_GROUPS_READY, zadd)
    rcall_each('ZREM', K_GROUPS, gone)
  end
  return 0, false
end

-- lease_jobs' batch stopped before job seq (popped at position i): if it came from a group, put
-- it back first in line (its group first in the ready set); a grouped hand-off (`was_hand`, its
-- stored meta `raw`) ends its run and goes back in front of its group. False for an ungrouped
-- job: the caller puts it back in its list.
local function group_put_back(gl, seq, raw, i, was_hand)
  local g = gl and gl.sel[seq]
  if g then
    rcall('ZADD', group_key(g), gl.sel_s[seq], seq)
    gl.sel[seq] = nil
    gl.st[g].room = gl.st[g].room + 1
    if group_refresh(g, gl.now) then
      rcall('ZADD', K_GROUPS_READY, int(gl.sel_p[seq] * GROUP_SPAN + i), g)
    end
    return true
  end
  local meta = was_hand and raw and meta_group(raw) and decode_meta(raw)
  if meta then
    group_run_ended(meta.g, gl and gl.now)
    group_requeue(seq, meta, true, gl and gl.now)
    return true
  end
  return false
end

-- After a grouped lease: count the jobs taken from groups running (with their lease tokens in
-- their groups' rate logs) and out of the grouped pending counts.
local function group_commit(gl, seqs, tokens)
  local taken, names, prio_n = {}, {}, {}
  for i, seq in ipairs(seqs) do
    local g = gl.sel[seq]
    if g then
      local n = taken[g]
      if not n then
        names[#names + 1] = g
        n = 0
      end
      taken[g] = n + 1
      local p = gl.sel_p[seq]
      prio_n[p] = (prio_n[p] or 0) + 1
      local rule = gl.st[g].rule
      if rule.m then
        group_log(g, { tokens[i] }, gl.now, rule.d)
      end
    end
  end
  local set = {}
  for _, g in ipairs(names) do
    set[#set + 1] = g
    set[#set + 1] = count_str(gl.st[g].running + taken[g])
  end
  if #set > 0 then
    rcall('HSET', K_GROUP_RUNNING, '', RUNNING_PAD)
  end
  rcall_each('HSET', K_GROUP_RUNNING, set)
  for p = 0, 9 do
    if prio_n[p] then
      group_count(p, -prio_n[p])
    end
  end
end

-- The earliest time a group held by its rate limit may start a job again (nil: none is held).
local function group_next_due()
  return tonumber(rcall('ZRANGE', K_GROUPS_LIMITED, 0, 0, 'WITHSCORES')[2])
end

-- The groups of leased jobs `seqs` taken from groups in this call (nil for the others: a hand-off,
-- an ungrouped job), for their 'active' event (emit_jobs' `known`).
local function group_known(gl, seqs)
  local out, sel = {}, gl.sel
  for i, seq in ipairs(seqs) do
    out[i] = sel[seq]
  end
  return out
end
