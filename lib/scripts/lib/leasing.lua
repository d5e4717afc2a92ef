-- Leasing: popping pending jobs (and a hand-off first in line) into leases for a worker.

-- Whether worker `wid` holds any job (its lease set, checked against the lease hash).
local function holds_any(wid)
  local held = rcall('SMEMBERS', K_WORKER_LEASES)
  if #held == 0 then
    return false
  end
  local tokens = hmget(K_LEASE_HOLDERS, held)
  for i = 1, #held do
    if held_by(tokens[i], wid) then
      return true
    end
  end
  return false
end

-- The grouped branch of lease_jobs (docs/groups.md; the state: lib/scripts/lib/groups.lua).
-- Its state for one lease call at `now`, or nil when no group is ready nor held (then lease_jobs
-- takes today's ungrouped path, at the cost of this one EXISTS). Groups whose hold ended are
-- refreshed first. `on`: some group is ready, so jobs are taken round robin (group_pop); the
-- ungrouped pending lists then take part as the ready member '' (from their highest priority).
local function group_lease_start(now)
  if rcall('EXISTS', K_GROUPS_READY, K_GROUPS_LIMITED) == 0 then
    return nil
  end
  for _, g in ipairs(rcall('ZRANGEBYSCORE', K_GROUPS_LIMITED, '-inf', now, 'LIMIT', 0, 100)) do
    rcall('ZREM', K_GROUPS_LIMITED, g)
    group_refresh(g, now)
  end
  local gl = { now = now, on = false, st = {}, sel = {}, ug = 10 }
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
    local rule, run = rules[g] or {}, tonumber(running[i]) or 0
    local room, at = 1e9, 0
    if rule.c or rule.m then
      room, at = group_room(g, rule, run, gl.now)
    end
    gl.st[g] = { rule = rule, running = run, room = room, room0 = room, at = at }
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
-- notes each job's { group, priority, score } in gl.sel. Returns the need left and whether
-- nothing is left.
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
    local head = rcall('ZRANGE', K_GROUPS_READY, 0, need - 1, 'WITHSCORES')
    if #head == 0 then
      return 0, true
    end
    local level = math.floor(tonumber(head[2]) / GROUP_SPAN)
    local bound = (level + 1) * GROUP_SPAN
    local round, scores = {}, {}
    for i = 1, #head, 2 do
      local score = tonumber(head[i + 1])
      if score >= bound then
        break
      end
      round[#round + 1] = head[i]
      scores[#round] = score
    end
    group_load(gl, round)
    local turn = rcall('INCRBY', K_GROUP_TURN_COUNTER, #round) - #round
    local zadd, zrem = {}, {}
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
        if not r[1] then
          -- Empty (its last job went at an earlier turn): forgotten unless it ran one just now.
          if st.room == st.room0 then
            group_tidy(g)
          end
        elseif math.floor(tonumber(r[2]) / GROUP_SPAN) > level then
          -- Its score was ahead of its head's priority: back, and the group at that priority.
          rcall('ZADD', group_key(g), r[2], r[1])
          keep = int(math.floor(tonumber(r[2]) / GROUP_SPAN) * GROUP_SPAN + scores[i] % GROUP_SPAN)
        else
          seq, p = r[1], math.floor(tonumber(r[2]) / GROUP_SPAN)
          gl.sel[seq] = { g, p, r[2] }
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
  end
  return 0, false
end

-- lease_jobs' batch stopped before job seq (popped at position i): if it came from a group, put
-- it back first in line (its group first in the ready set); a grouped hand-off (`was_hand`, its
-- stored meta `raw`) ends its run and goes back in front of its group. False for an ungrouped
-- job: the caller puts it back in its list.
local function group_put_back(gl, seq, raw, i, was_hand)
  local s = gl and gl.sel[seq]
  if s then
    local g = s[1]
    rcall('ZADD', group_key(g), s[3], seq)
    gl.sel[seq] = nil
    gl.st[g].room = gl.st[g].room + 1
    if group_refresh(g, gl.now) then
      rcall('ZADD', K_GROUPS_READY, int(s[2] * GROUP_SPAN + i), g)
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
    local s = gl.sel[seq]
    if s then
      local g = s[1]
      local n = taken[g]
      if not n then
        names[#names + 1] = g
        n = 0
      end
      taken[g] = n + 1
      prio_n[s[2]] = (prio_n[s[2]] or 0) + 1
      if gl.st[g].rule.m then
        group_log(g, { tokens[i] }, gl.now, gl.st[g].rule.d)
      end
    end
  end
  local set = {}
  for _, g in ipairs(names) do
    set[#set + 1] = g
    set[#set + 1] = gl.st[g].running + taken[g]
  end
  rcall_each('HSET', K_GROUP_RUNNING, set)
  for p = 0, 9 do
    if prio_n[p] then
      group_count(p, -prio_n[p])
    end
  end
end

-- Take a lease on up to `count` pending jobs for worker `wid` ("0" = no worker).
-- A job handed off to parked workers and still in the wake list is taken in its turn (first
-- of its priority: its list was empty when it came). A worker left with free slots is marked
-- parked for `park_ms` (0 = not a worker that parks), so that adds hand jobs off to it.
-- A suspect job (meta s) runs alone: it is leased only as the single job of a batch, to a
-- worker holding no other job, with an 's' token; met anywhere else it goes back first in line
-- and the batch ends there, and a worker holding other jobs is told to drain (finish what it
-- holds, lease nothing meanwhile) so that it can take the suspect next.
-- Flow control (leases_allowed) may allow fewer than `count`: then nobody else is woken for the
-- jobs left (there is no room for them) and the worker is not parked.
-- Appends seq, token, payload, meta to `out`; returns the number leased, whether the worker
-- should drain, when to look again when limited (see leases_allowed; 0: not limited) and the
-- pause version (0: not paused).
local function lease_jobs(count, lease_ms, wid, now, out, park_ms)
  if wid ~= '0' then
    rcall('ZREM', K_PARKED, wid)
  end
  local allowed, limited_until, paused, rate_ms = leases_allowed(now, count)
  if allowed == 0 then
    return 0, false, limited_until, paused
  end
  local limited = allowed < count
  count = allowed
  local hand = parse_hand(rcall('LPOP', K_WAKE))
  promote(now, 1000)
  local gl = group_lease_start(now)
  local seqs, datas, metas = {}, {}, {}
  local drained, stopped, drain, solo = false, false, false, false
  local last_p = 0
  -- A cancelled job leaves its seq in a pending list (its data is gone): skip it and pop on,
  -- so `count` live jobs are leased while any are pending.
  while #seqs < count and not drained and not stopped do
    local popped, prios = {}, {}
    local need = count - #seqs
    if gl and gl.on then
      need, drained = group_pop(gl, need, hand, popped, prios)
    end
    for p = 0, 9 do
      if need <= 0 then
        break
      end
      if hand and not hand.taken and hand.p == p then
        hand.taken = true
        if hand_live(hand) then
          popped[#popped + 1] = hand.seq
          prios[#popped] = p
          need = need - 1
          last_p = p
        end
      end
      local got = need > 0 and rcall('LPOP', pending_key(p), need)
      if got then
        last_p = p
        for _, seq in ipairs(got) do
          popped[#popped + 1] = seq
          prios[#popped] = p
        end
        need = need - #got
      end
    end
    if need > 0 then
      drained = true
    end
    if #popped > 0 then
      local d = data_mget(popped)
      local m = hmget(K_META, popped)
      for i, seq in ipairs(popped) do
        if stopped then
          -- Back first in line, in order (walked backwards below).
        elseif d[i] and m[i] and string.find(m[i], '"s":', 1, true) and decode_meta(m[i]).s then
          if #seqs == 0 and (wid == '0' or not holds_any(wid)) then
            seqs[1], datas[1], metas[1] = seq, d[i], m[i]
            solo = true
            popped[i] = false
          else
            drain = wid ~= '0'
          end
          stopped = true
        elseif d[i] then
          seqs[#seqs + 1] = seq
          datas[#datas + 1] = d[i]
          metas[#metas + 1] = m[i]
          popped[i] = false
        else
          popped[i] = false -- a cancelled job's tombstone: dropped
        end
      end
      if stopped then
        for i = #popped, 1, -1 do
          local seq = popped[i]
          if seq then
            if hand and seq == hand.seq then
              -- The hand-off goes back as a plain pending job.
              rcall('ZREM', K_LEASED, seq)
              rcall('HDEL', K_LEASE_HOLDERS, seq)
            end
            if not group_put_back(gl, seq, m[i], i, hand and seq == hand.seq) then
              rcall('LPUSH', pending_key(prios[i]), seq)
            end
          end
        end
      end
    end
  end
  local more = stopped
  if gl and gl.on then
    more = more or rcall('ZCARD', K_GROUPS_READY) > 0
  elseif not drained and not stopped then
    -- Lists before the last one popped from were emptied on the way.
    for p = last_p, 9 do
      if rcall('LLEN', pending_key(p)) > 0 then
        more = true
        break
      end
    end
  end
  if more then
    -- More work waits: pass the wake on to another idle worker (unless the limit stopped us).
    if not limited then
      wake()
    end
  else
    -- Every pending list is empty: a wake token left behind would only wake a worker for
    -- nothing (and outlive the queue's jobs), so drop it.
    rcall('DEL', K_WAKE)
  end
  if hand and not hand.taken then
    -- Not reached (the batch filled up first): it stays first in line for the next worker.
    rcall('LPUSH', K_WAKE, hand.entry)
  end
  local live = #seqs
  if park_ms > 0 and live < count and not drain and not solo then
    rcall('ZADD', K_PARKED, now + park_ms, wid)
  end
  local group_due = gl and live < count and group_next_due()
  if live == 0 then
    return 0, drain, 0, 0, group_due
  end
  local base = rcall('INCRBY', K_TOKEN_COUNTER, live) - live
  local deadline = now + lease_ms
  local zargs, hargs, sargs, started = {}, {}, {}, {}
  for i, seq in ipairs(seqs) do
    local token = int(base + i)
    if solo then
      token = 's' .. token
    end
    started[i] = token
    zargs[#zargs + 1] = deadline
    zargs[#zargs + 1] = seq
    hargs[#hargs + 1] = seq
    hargs[#hargs + 1] = token .. ':' .. wid
    sargs[#sargs + 1] = seq
    out[#out + 1] = seq
    out[#out + 1] = token
    out[#out + 1] = datas[i]
    out[#out + 1] = metas[i] or ''
  end
  rcall_each('ZADD', K_LEASED, zargs)
  rcall_each('HSET', K_LEASE_HOLDERS, hargs)
  if wid ~= '0' then
    rcall_each('SADD', K_WORKER_LEASES, sargs)
  end
  if rate_ms then
    log_lease_starts(now, started, rate_ms)
  end
  if gl and gl.on then
    group_commit(gl, seqs, started)
  end
  emit_jobs('active', seqs, metas, { 'w', wid })
  if limited then
    return live, drain, limited_until, 0
  end
  return live, drain, 0, 0, group_due
end

-- The head of a lease reply, { now, deadline, next due, drain, paused }, for a lease of
-- `lease_ms` from `now`; lease_into fills it in. The caller may append entries of its own after
-- the head (complete_and_lease's flags) before the leased jobs.
-- next due: when to look again (the next delayed job, or the next time flow control allows a
-- lease; -1 = none: wait for a wake-up or a resume; 0 = not looked up because the batch is
-- full); drain: 1 when the worker should finish what it holds before leasing again (see
-- lease_jobs); paused: the queue's pause version (0 = not paused).
local function lease_reply(now, lease_ms)
  return { now, now + lease_ms, 0, 0, 0 }
end

-- Lease up to `count` jobs for worker `wid` into lease reply `out`: appends per job seq, token,
-- payload, meta (lease_jobs) and fills in the head's next due, drain and paused.
local function lease_into(out, count, lease_ms, wid, now, park_ms)
  local live, drain, limited_until, paused, group_due =
    lease_jobs(count, lease_ms, wid, now, out, park_ms)
  if drain then
    out[4] = 1
  end
  out[5] = paused
  if limited_until ~= 0 then
    out[3] = limited_until
  elseif live < count then
    -- The next due time matters only to a worker left with free slots.
    out[3] = next_due()
    if group_due and (out[3] < 0 or group_due < out[3]) then
      out[3] = group_due
    end
  end
end
