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

-- Per seq of `seqs`, whether its payload exists (true or false), without reading it.
local function payloads_exist(seqs)
  local out = {}
  for i, seq in ipairs(seqs) do
    out[i] = data_has(seq)
  end
  return out
end

-- Take a lease on up to `count` pending jobs for worker `wid` ("0" = no worker).
-- A job handed off to parked workers and still in the wake list is taken in its turn (first
-- of its priority: its list was empty when it came). A worker that leased fewer than
-- `park_below` jobs (a slot of its stays free to run one at once) is marked parked for `park_ms`
-- (0 = not a worker that parks), so that adds hand jobs off to it.
-- A suspect job (meta s) runs alone: it is leased only as the single job of a batch, to a
-- worker holding no other job, with an 's' token; met anywhere else it goes back first in line
-- and the batch ends there, and a worker holding other jobs is told to drain (finish what it
-- holds, lease nothing meanwhile) so that it can take the suspect next.
-- Flow control (leases_allowed) may allow fewer than `count`: then nobody else is woken for the
-- jobs left (there is no room for them) and the worker is not parked.
-- Fills in `out` (a lease reply: lease_reply) the leased jobs: its ids field, then per job its
-- payload ('' when `by_ref`: the caller reads the payloads itself, see lease_reply) and meta;
-- returns the number leased, whether the worker
-- should drain, when to look again when limited (see leases_allowed; 0: not limited) and the
-- pause version (0: not paused).
local function lease_jobs(count, lease_ms, wid, now, out, park_ms, by_ref, park_below)
  if wid ~= '0' then
    rcall('ZREM', K_PARKED, wid)
  end
  local allowed, limited_until, paused, rate_ms = leases_allowed(now, count)
  if allowed == 0 then
    return 0, false, limited_until, paused
  end
  if park_below <= 0 and rcall('ZRANGEBYSCORE', K_PARKED, now, '+inf', 'LIMIT', '0', '1')[1] then
    -- Room to prefetch only (every slot of this worker runs a job) while another worker waits
    -- idle: that one takes the jobs (woken), not this one's buffer behind its runs.
    promote(now, 1000)
    if any_pending() then
      wake()
    end
    return 0, false, 0, paused
  end
  local limited = allowed < count
  count = allowed
  local hand = parse_hand(rcall('LPOP', K_WAKE))
  promote(now, 1000)
  local gl = group_lease_start(now)
  local seqs, datas, metas = {}, {}, {}
  local drained, stopped, drain, solo = false, false, false, false
  local last_p = 0
  local first_p = nil -- the first list to pop from (lists before it are empty)
  -- A cancelled job leaves its seq in a pending list (its data is gone): skip it and pop on,
  -- so `count` live jobs are leased while any are pending.
  while #seqs < count and not drained and not stopped do
    local popped, prios = {}, {}
    local need = count - #seqs
    if gl and gl.on then
      need, drained = group_pop(gl, need, hand, popped, prios)
    end
    local need_n, need_s = nil, nil
    if need > 0 and not first_p then
      -- Most queues have no job above the default priority: one EXISTS for those lists instead
      -- of an LPOP each (a command costs a script ~7k instructions). A hand-off is taken in its
      -- list's turn (it came when its list was empty), so the pops start there at the latest.
      -- (The lists 0-4: those before DEFAULT_PRIO, 5.)
      first_p = 0
      if rcall('EXISTS', pending_key(0), pending_key(1), pending_key(2), pending_key(3), pending_key(4)) == 0 then
        first_p = DEFAULT_PRIO
      end
      if hand and not hand.taken and hand.p < first_p then
        first_p = hand.p
      end
    end
    for p = first_p or 0, 9 do
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
      local got = false
      if need > 0 then
        if need ~= need_n then
          -- (A number argument is formatted by Redis with printf, ~2k instructions: the count
          -- is formatted once for the lists it is asked of.)
          need_n, need_s = need, int(need)
        end
        got = rcall('LPOP', pending_key(p), need_s)
      end
      if got then
        last_p = p
        local n = #popped
        for k = 1, #got do
          popped[n + k] = got[k]
          prios[n + k] = p
        end
        need = need - #got
      end
    end
    if need > 0 then
      drained = true
    end
    if #popped > 0 then
      -- By reference: whether each payload exists (a cancelled job leaves its seq behind), without
      -- copying it into Lua (every string entering Lua is hashed whole: ~1 µs per KB).
      local d = by_ref and payloads_exist(popped) or data_mget(popped)
      local m = metas_of(popped)
      for i = 1, #popped do
        local seq = popped[i]
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
          local n = #seqs + 1
          seqs[n] = seq
          datas[n] = d[i]
          if m[i] then -- (no nil stored: Lua 5.1 makes a key for it)
            metas[n] = m[i]
          end
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
              lease_unpad()
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
  if park_ms > 0 and live < count and live < park_below and not drain and not solo then
    rcall('ZADD', K_PARKED, int(now + park_ms), wid)
  elseif hand and not hand.taken then
    -- This worker parks no more: with no other worker parked to pop it, the hand-off waits
    -- in its pending list, not leased to nobody (docs/internals/hand-off.md).
    unhand_if_none_parked(now)
  end
  local group_due = gl and live < count and group_next_due()
  if live == 0 then
    return 0, drain, 0, 0, group_due
  end
  local base = rcall('INCRBY', K_TOKEN_COUNTER, int(live)) - live
  -- Numbers go to Redis as strings: Lua numbers are formatted with %.17g, per job.
  local deadline = int(now + lease_ms)
  local added = times_set_started(seqs, now)
  local tokens = int_run(base, live)
  -- The pads first (LEASE_PAD, lib/keys.ts): both keys stay hashed, each insert O(log n).
  local zargs, hargs, sargs, started, ids = { '+inf', LEASE_PAD }, { LEASE_PAD, '' }, {}, {}, {}
  local added_ints = { [0] = '0' } -- each distinct added time formatted once (jobs added together)
  -- (Numeric loops and indexes in the per-job loops: an ipairs step is a C call, ~0.5k
  -- instructions, and #t a search.)
  local o = #out
  for i = 1, live do
    local seq = seqs[i]
    local token = tokens[i]
    if solo then
      token = 's' .. token
    end
    started[i] = token
    local a = added_ints[added[i]]
    if not a then
      a = int(added[i])
      added_ints[added[i]] = a
    end
    zargs[2 * i + 1] = deadline
    zargs[2 * i + 2] = seq
    hargs[2 * i + 1] = seq
    hargs[2 * i + 2] = token .. ':' .. wid
    sargs[i] = seq
    ids[i] = seq .. ' ' .. token .. ' ' .. a
    out[o + 2 * i - 1] = by_ref and '' or datas[i]
    out[o + 2 * i] = metas[i] or ''
  end
  out[7] = table.concat(ids, ' ')
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
  local known = gl and gl.on and group_known(gl, seqs)
  emit_jobs('active', seqs, metas, { 'w', wid, 'T', int(now) }, time_deltas(now, added), known)
  if limited then
    return live, drain, limited_until, 0
  end
  return live, drain, 0, 0, group_due
end

-- The head of a lease reply, { now, deadline, next due, drain, paused, flags, ids }, for a lease
-- of `lease_ms` from `now`; lease_into fills it in, then appends per leased job its payload and
-- meta ('' = none). A lease by reference (a worker leasing large payloads) replies '' for each
-- payload: the worker reads them with HMGET behind the call (a payload entering Lua costs ~1 µs
-- per KB, hashed whole, then copied out again). flags: complete_and_lease's answers, one character '1' or '0' each ('' for
-- lease); ids: per leased job 'seq token added' (added: ms, 0 = not known), all in one string
-- separated by single spaces (seqs and tokens have none). Few, small reply entries per job: the
-- client decodes each entry of a reply on its own, so packing them is what a job costs least.
-- next due: when to look again (the next delayed job, or the next time flow control allows a
-- lease; -1 = none: wait for a wake-up or a resume; 0 = not looked up because the batch is
-- full); drain: 1 when the worker should finish what it holds before leasing again (see
-- lease_jobs); paused: the queue's pause version (0 = not paused).
local function lease_reply(now, lease_ms)
  return { now, now + lease_ms, 0, 0, 0, '', '' }
end

-- Lease up to `count` jobs for worker `wid` into lease reply `out` (lease_jobs: its ids, per job
-- payload, or '' `by_ref`, and meta) and fill in the head's next due, drain and paused.
local function lease_into(out, count, lease_ms, wid, now, park_ms, by_ref, park_below)
  local live, drain, limited_until, paused, group_due =
    lease_jobs(count, lease_ms, wid, now, out, park_ms, by_ref, park_below)
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
