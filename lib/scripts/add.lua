-- add: store and enqueue a batch of jobs (add_plain.lua: the same for jobs without caller ids
-- or schedules).
--! keys: groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending addedTimes jobLogs
--! keys: seqCounter tokenCounter data dataBuckets meta callerIds delayed leased leaseHolders dead progress keptCallerIds wake parked addCallRecords flowControl rateLog eventLog waitingChildren flowParent pending*
--! argv: priorities handoff_lease_ms count call record_ttl_ms ack_count acked_calls*ack_count
--! argv: jobs(caller_id payload meta priority schedule)*count
-- priorities: the priorities used (digits: the pending lists passed, in that order);
-- handoff_lease_ms: the lease of a job handed off (0 = never hand off); call: this call's number
-- in the producer's session ('' = none); record_ttl_ms: how long the producer's call records
-- last; acked_calls: the numbers of its earlier calls whose replies arrived (their records go).
-- Per job: caller_id ('' = generate), payload, meta (JSON, '' = none), priority (0..9),
-- schedule ('' = now, 'd<ms>' = delay, 'a<ms>' = absolute Redis time in ms), followed for a
-- caller id with a dedupe window by ',<ttl ms>' and 'r' when it replaces (e.g. 'd500,1000r').
-- Idempotent: a client that re-sends this call after a reconnect (its reply was lost) gets the
-- first run's reply and nothing is added twice. Each call records what it did under its number
-- in the producer's hash (K_ADD_CALL_RECORDS), until the producer says the reply arrived (its
-- next call) or the hash expires.
-- A caller id is taken while its job exists and, after the job completed, until the dedupe
-- window ends ('~<until>' in the caller-id index).
-- Dedupe window (',<ttl>'): the id also stays taken until <ttl> ms after the add (its end in
-- K_KEPT_CALLER_IDS, read when the job completes). Replace ('r'): when the id's job waits
-- (pending or delayed), it is removed (a pending list keeps a tombstone that leasing skips) and
-- this job takes its place under the same caller id, with its own payload, options and
-- schedule; the window restarts. A leased, dead or completed job is left alone (flag 0).
-- Hand-off: while a worker is parked and no wake-up waits, the first job to run now is leased
-- to holder 'h' and pushed to the wake list whole (docs/internals/hand-off.md) — unless flow
-- control (pause, rate limit, global concurrency) allows no lease now; a hand-off counts as a
-- lease.
-- Returns: flat list, per job: public id, added (1 new | 0 an existing job has that caller id |
--   2 replaced the waiting job of that caller id).
local hand_ms = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
local call, acked = ARGV[4], tonumber(ARGV[6])
local first = 7 + acked
local out = {}
if call ~= '' then
  local done = rcall('HGET', K_ADD_CALL_RECORDS, call)
  if done then
    -- Run before: answer what that run did. done = '<seq base>:<flag per job>'.
    local base, flags = string.match(done, '^(%d+):(.*)$')
    local k = 0
    for j = 0, count - 1 do
      local cid = ARGV[first + j * 5]
      local f = string.sub(flags, j + 1, j + 1)
      if f ~= '0' then
        k = k + 1
        out[#out + 1] = cid ~= '' and cid or int(tonumber(base) + k)
        out[#out + 1] = tonumber(f)
      else
        out[#out + 1] = cid
        out[#out + 1] = 0
      end
    end
    return out
  end
end
-- Redis time, read only when a job has a schedule or meets a caller id kept after completion.
local now = nil
-- The seq behind caller id `cid`, or false when the id is free.
local function taken(cid)
  local v = rcall('HGET', K_CALLER_IDS, cid)
  local until_ms = taken_until(v)
  if until_ms then
    if not now then
      now = now_ms()
    end
    if until_ms <= now then
      return false
    end
  end
  return v
end
-- A caller id's dedupe window (',<ttl>[r]' after the schedule): schedule, ttl, replace.
local function window_of(sched)
  if not string.find(sched, ',', 1, true) then
    return sched, nil, false
  end
  local s, ttl, r = string.match(sched, '^([^,]*),(%d+)(r?)$')
  return s, tonumber(ttl), r == 'r'
end
local fresh = 0
for j = 0, count - 1 do
  local cid = ARGV[first + j * 5]
  if cid == '' then
    fresh = fresh + 1
  else
    local v = taken(cid)
    if not v or (taken_until(v) == nil and string.sub(ARGV[first + j * 5 + 4], -1) == 'r') then
      fresh = fresh + 1
    end
  end
end
local base = 0
if fresh > 0 then
  base = rcall('INCRBY', K_SEQ_COUNTER, fresh) - fresh
  now = now or now_ms() -- the added time of the new jobs
end
-- Grouped jobs to place (group_pend).
local gpend = {}
-- Whether a job to run now (of group g, or nil; of priority prio) may be handed off: decided
-- once, used once (a job of a group that cannot start one now leaves it to the next, as does an
-- ungrouped job whose pending list holds jobs: they were added first).
local can_hand = nil
local hand_rate_ms = false
local function hand_off_now(g, prio)
  if can_hand == nil then
    can_hand = false
    if hand_ms > 0 then
      local t, rate_ms = hand_off_allowed(rcall('LLEN', K_WAKE), now)
      if t then
        now, can_hand, hand_rate_ms = t, true, rate_ms
      end
    end
  end
  if
    can_hand
    and (g and group_may_hand(g, gpend, now) or not g and rcall('LLEN', pending_key(tonumber(prio))) == 0)
  then
    can_hand = false
    return true
  end
  return false
end
-- The job to hand off; done after the data is stored (a write that fails, e.g. on a key of
-- the wrong type, then leaves no wake entry for a job without data).
local hand = nil
local data_args = {}
local meta_args = {}
local pending = {}
local delayed = {}
local delayed_ids = {} -- public ids of the delayed jobs (events)
local delayed_raws = {} -- and their meta (a grouped job's event carries its group)
local any_group = false
local k = 0
local flags = {}
-- Write what the loop gathered (called again before a replace looks at a job of this call).
local any = false
local function flush()
  if #data_args > 0 then
    data_set(data_args)
    times_added_pairs(data_args, now)
    data_args = {}
  end
  if #meta_args > 0 then
    rcall_each('HSET', K_META, meta_args)
    meta_args = {}
  end
  if hand then
    times_set_started({ hand[1] }, now)
    local token = hand_off(hand[1], hand[2], hand[3], hand[4], now, hand_ms, hand_rate_ms)
    if hand[5] then
      group_handed(hand[5], token, now)
    end
    hand = nil
  end
  if #delayed > 0 then
    schedule(delayed)
    delayed = {}
  end
  local placed = push_pending(pending)
  pending = {}
  if #gpend > 0 and group_push(gpend, now) then
    placed = true
  end
  gpend = {}
  if placed and not any then
    any = true
    wake()
  end
end
-- The waiting job n of caller id cid goes, for a replacing add: true when it did.
local function unplace(seq)
  flush()
  if rcall('ZSCORE', K_LEASED, seq) or rcall('ZSCORE', K_DEAD, seq) or not data_has(seq) or flow_held(seq) then
    return false
  end
  -- With its meta: a grouped job leaves its group's line and pending count too.
  destroy(seq, decode_meta(rcall('HGET', K_META, seq)))
  return true
end
for j = 0, count - 1 do
  local o = first + j * 5
  local cid, payload, meta, prio, sched = ARGV[o], ARGV[o + 1], ARGV[o + 2], ARGV[o + 3], ARGV[o + 4]
  local existing, ttl, replace = false, nil, false
  local flag = 1
  if cid ~= '' then
    sched, ttl, replace = window_of(sched)
    existing = taken(cid)
    if existing and replace and not taken_until(existing) and unplace(existing) then
      existing, flag = false, 2
    end
  end
  if existing then
    out[#out + 1] = cid
    out[#out + 1] = 0
    flags[j + 1] = '0'
  else
    flags[j + 1] = tostring(flag)
    k = k + 1
    local seq = int(base + k)
    if cid ~= '' then
      rcall('HSET', K_CALLER_IDS, cid, seq)
      if ttl then
        if not now then
          now = now_ms()
        end
        rcall('ZADD', K_KEPT_CALLER_IDS, now + ttl, cid)
      end
    end
    data_args[#data_args + 1] = seq
    data_args[#data_args + 1] = payload
    if meta ~= '' then
      meta_args[#meta_args + 1] = seq
      meta_args[#meta_args + 1] = meta
    end
    local g = meta_group(meta)
    any_group = any_group or g ~= nil
    local due = nil
    local kind = string.sub(sched, 1, 1)
    if kind ~= '' and not now then
      now = now_ms()
    end
    if kind == 'd' then
      due = now + tonumber(string.sub(sched, 2))
    elseif kind == 'a' then
      due = tonumber(string.sub(sched, 2))
    end
    if due and due > now then
      delayed[#delayed + 1] = due
      delayed[#delayed + 1] = seq
      delayed_ids[#delayed_ids + 1] = cid ~= '' and cid or seq
      delayed_raws[#delayed_ids] = meta
    elseif hand_off_now(g, prio) then
      hand = { seq, payload, meta, prio, g }
    elseif g then
      group_pend(gpend, g, prio, seq)
    else
      pend(pending, prio, seq)
    end
    if cid ~= '' then
      out[#out + 1] = cid
    else
      out[#out + 1] = seq
    end
    out[#out + 1] = flag
  end
end
flush()
if EV_ON and fresh > 0 then
  local added, raws = {}, {}
  for i = 1, #out, 2 do
    if out[i + 1] == 1 then
      added[#added + 1] = out[i]
      raws[#added] = ARGV[first + (i - 1) / 2 * 5 + 2]
    end
  end
  emit_jobs('added', added, any_group and raws)
  emit_jobs('delayed', delayed_ids, any_group and delayed_raws)
end
if call ~= '' then
  add_record(call, base, table.concat(flags))
end
return out
