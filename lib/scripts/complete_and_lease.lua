-- complete_and_lease: adopt hand-offs, complete a batch of jobs, then (optionally) lease more,
-- in one call: the Worker's round trip (lease.lua serves only the manual lease()).
--! keys: pending tokenCounter data dataBuckets meta callerIds delayed leased leaseHolders dead wake results resultExpiries progress noticeChannel parked keptCallerIds workerLeases workerHandoffs scheduleLatestJobs flowControl rateLog eventLog waitingChildren flowParent flowOutbox flowOutboxAt addedTimes jobLogs completedJobs metricsCompleted metricsFailed metricsDead completedInfo
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: worker_id result_ttl_ms dedupe_window_ms lease_count lease_ms park_ms park_below sweep by_ref own
--! argv: keep_count keep_age_ms max_log_lines adopt_count complete_count
--! argv: adopt_tokens*adopt_count completions logs results...
-- result_ttl_ms: 0 = results off; lease_count: 0 = lease none; park_ms: 0 = do not mark the
-- worker parked; park_below: it is parked only when it leased fewer jobs than this (its free
-- slots: room to prefetch alone does not park it, it does not wait); sweep: 1 when the worker's idle wait moved entries into its hand-off list since
-- its last sweep (plain wake-ups it took are passed on when it leases nothing: it cannot act); by_ref: 1 to lease by reference (each payload '' in the reply: the worker reads
-- them itself, see lease_reply); own: 1 from a Worker (a complete of a kept job it completed
-- itself answers '1': the re-send of a call whose reply was lost); keep_count, keep_age_ms: keepCompleted (0 = completed jobs are not kept;
-- lib/scripts/lib/completed.lua); max_log_lines: the cap of a job's log; adopt_tokens: the
-- hand-offs it takes over, each '<token>:<seq>' (a bare token: its re-send is not recognised);
-- completions: the completed jobs in ONE argument, 'seq token seq token ...' (far cheaper for
-- the client to send than two arguments per job); logs: their log lines (logs_apply, lib/scripts/lib/history.lua), '' = none; results: per completed
-- job its result ('' = none), sent when results are stored, or kept and any job has one, or
-- some job of the batch is a flow child (its result goes to its parent: lib/scripts/lib/flows.lua).
-- Adopting comes first (docs/internals/hand-off.md, step 4): the worker takes over the jobs
-- handed off to it that it received, so a complete of such a job in the same call is its own.
-- The sweep empties its hand-off list: plain wake-ups and hand-offs cancelled or taken back
-- meanwhile are dropped; a live hand-off it did not name arrived after this call was sent and
-- stays for the next one.
-- A job completes when it still exists, whoever holds it now (a stale holder saves the work);
-- the current holder, if another, is told on the notice channel. From a Worker (own), a complete
-- of a kept job it completed (a re-send: its reply was lost) answers '1' and does nothing. A completed
-- job's caller id stays taken for the dedupe window. A kept completed job keeps its payload,
-- meta, times and log (and its result); the kept jobs are trimmed to keepCompleted here.
-- Under a global concurrency limit, completes that lease nothing in the same call wake an idle
-- worker for the slots they freed.
-- Returns: a lease reply (lease_reply in lib/scripts/lib/leasing.lua): { now, deadline, next
--   due, drain, paused, flags, ids, then per leased job: payload, meta }; flags: per adopted job
--   '1'|'0' ('0': cancelled or taken back meanwhile), then per completed job '1'|'0'.
-- The body runs as a function: its locals then have a budget of their own (Lua allows 200 in
-- one function, and the prelude and library take ~175 of the main chunk's).
local function run()
  local wid = ARGV[1]
  local ttl, window = tonumber(ARGV[2]), tonumber(ARGV[3])
  local lease_count, lease_ms, park_ms = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
  local park_below = tonumber(ARGV[7])
  local sweep, by_ref, own = ARGV[8] == '1', ARGV[9] == '1', ARGV[10] == '1'
  local keep_count, keep_age, max_log_lines = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
  local adopt_count, count = tonumber(ARGV[14]), tonumber(ARGV[15])
  local keeping = keep_count > 0
  local now = now_ms()
  ev_gather() -- this call's events: one entry, written before it returns
  local adopted = {}
  local adopted_seqs, adopted_added = {}, {} -- for the event log
  local named, adopt_seqs = {}, {}
  for j = 1, adopt_count do
    adopted[j] = '0' -- (flags are strings: table.concat formats a number with printf)
    local token, seq = string.match(ARGV[15 + j], '^(%d+):(.+)$')
    named[token or ARGV[15 + j]] = j
    adopt_seqs[j] = seq
  end
  local plain = false -- the sweep dropped a plain wake-up
  if sweep or adopt_count > 0 then
    local keep = {}
    for _, e in ipairs(rcall('LRANGE', K_WORKER_HANDOFFS, 0, -1)) do
      local h = parse_hand(e)
      plain = plain or not h
      if h and hand_live(h) then
        local j = named[h.token]
        if j then
          rcall('HSET', K_LEASE_HOLDERS, h.seq, h.token .. ':' .. wid)
          rcall('ZADD', K_LEASED, int(now + lease_ms), h.seq)
          rcall('SADD', K_WORKER_LEASES, h.seq)
          adopted[j] = '1'
          adopted_seqs[#adopted_seqs + 1] = h.seq
          -- (Its added time, the entry head's last field: its 'active' event's addedAt.)
          adopted_added[#adopted_seqs] = tonumber(string.match(e, '^h%d+:%d+:%d+:%d:%d+:(%d+)\n')) or 0
        else
          keep[#keep + 1] = e
        end
      end
    end
    keep_handoffs(keep)
    -- From a Worker, a hand-off not found whose lease already reads <token>:<this worker> was
    -- adopted by this very call's first run (its reply was lost, ioredis sent it again): '1',
    -- and nothing again (its run, which may have ended, is not thrown away).
    if own and wid ~= '0' then
      for j = 1, adopt_count do
        local seq = adopt_seqs[j]
        if adopted[j] == '0' and seq then
          local token = string.match(ARGV[15 + j], '^(%d+):')
          if rcall('HGET', K_LEASE_HOLDERS, seq) == token .. ':' .. wid then
            adopted[j] = '1'
          end
        end
      end
    end
    emit_jobs('active', adopted_seqs, nil, { 'w', wid, 'T', int(now) }, time_deltas(now, adopted_added))
  end
  local o = 15 + adopt_count
  local seqs, sent, n = {}, {}, 0
  for seq, token in string.gmatch(ARGV[o + 1], '(%S+) (%S+)') do
    n = n + 1
    seqs[n] = seq
    sent[n] = token
  end
  local tokens, metas = {}, {}
  if count > 0 then
    tokens = hmget(K_LEASE_HOLDERS, seqs)
    metas = metas_of(seqs)
  end
  local mine, mine_metas = {}, {}
  local ended = {} -- groups of the jobs completed by their holder
  local results = {}
  local done = {}
  local done_seqs = {}
  local completed, completed_metas, completed_results = {}, {}, {} -- kept, and the event log
  local completed_tokens = {} -- the leases that completed them (kept)
  local c = 0 -- #completed
  local completed_groups = nil -- their groups where read here (by index), for the event log
  for j = 1, count do
    local seq = seqs[j]
    local token = sent[j]
    local meta = nil
    local ok, again = 0, false
    if done_seqs[seq] then
      -- Completed earlier in this batch (by another lease of the same job): once only.
      ok = 0
    elseif tokens[j] == token .. ':' .. wid then
      mine[#mine + 1] = seq
      if metas[j] then
        -- (Never a nil stored: Lua 5.1 makes a key for it, and rehashes the table each time.)
        mine_metas[#mine] = metas[j]
      end
      ok = 1
      -- Meta decoded only for a caller id (the hot path); the group is read without decoding.
      if metas[j] and string.find(metas[j], '"i":', 1, true) then
        meta = decode_meta(metas[j])
        if meta.i then
          keep_taken(meta.i, seq, now, window, meta.t == 1, keeping)
        end
      end
      local g = metas[j] and meta_group(metas[j])
      if g then
        ended[#ended + 1] = g
        -- (its index in `completed`: it is appended below)
        completed_groups = completed_groups or {}
        completed_groups[c + 1] = g
      end
    elseif data_has(seq) and not is_kept(seq) then
      meta = decode_meta(metas[j])
      local cid_held = meta.i and rcall('HGET', K_CALLER_IDS, meta.i) == seq
      if keeping then
        completed_unplace(seq, meta)
      else
        destroy(seq, meta)
      end
      if cid_held then
        rcall('HSET', K_CALLER_IDS, meta.i, seq)
        keep_taken(meta.i, seq, now, window, meta.t == 1, keeping)
      end
      ok = 1
      if tokens[j] then
        rcall('PUBLISH', K_NOTICE_CHANNEL, 'l:' .. seq)
      end
    elseif own and not tokens[j]
      and string.match(rcall('HGET', K_COMPLETED_INFO, seq) or '', '^([^:]*):') == wid .. '/' .. token then
      -- This lease completed the job (kept, its info names this worker and token): a re-send of
      -- a complete whose reply was lost (after a reconnect or a failover) answers what the first
      -- did, and does nothing again (DESIGN 11, docs/reliability-and-security.md). A complete of
      -- a later lease of the job by the same worker (its first lease lapsed, and that one's
      -- stale complete came first) is none: '0'.
      again = true
    end
    if ok == 1 and ttl > 0 then
      local pid = seq
      if meta and meta.i then
        pid = meta.i
      end
      results[#results + 1] = pid
      results[#results + 1] = ARGV[o + 2 + j]
    end
    done[j] = (ok == 1 or again) and '1' or '0'
    if ok == 1 and metas[j] and string.find(metas[j], '"[PW]":') then
      -- '' (no result: undefined is not kept) tells the parent null.
      local r = ARGV[o + 2 + j]
      flow_completed(seq, metas[j], r ~= '' and r or nil, now)
    end
    if ok == 1 then
      done_seqs[seq] = true
      c = c + 1
      completed[c] = seq
      completed_tokens[c] = token
      if metas[j] then
        completed_metas[c] = metas[j]
      end
      if ARGV[o + 2 + j] then
        completed_results[c] = ARGV[o + 2 + j]
      end
    end
  end
  local readable = keeping or ttl > 0
  emit_completed(completed, completed_metas, completed_results, now, wid, readable, completed_groups)
  metric_add('completed', #completed)
  if keeping then
    keep_completed(completed, completed_metas, completed_results, now, wid, completed_tokens)
    logs_apply(ARGV[o + 2], max_log_lines, function(seq)
      return done_seqs[seq] == true
    end)
  end
  if #mine > 0 then
    if not keeping then
      data_del(mine)
      if next(mine_metas) then
        rcall_each('HDEL', K_META, mine)
      end
      if rcall('EXISTS', K_PROGRESS) == 1 then
        rcall_each('HDEL', K_PROGRESS, mine)
      end
      logs_drop(mine, mine_metas)
    end
    rcall_each('HDEL', K_LEASE_HOLDERS, mine)
    rcall_each('ZREM', K_LEASED, mine)
  end
  if wid ~= '0' and count > 0 then
    rcall_each('SREM', K_WORKER_LEASES, seqs)
  end
  group_runs_ended(ended, now)
  if keeping then
    -- At least what this call pushed over the bound, and some of what aged.
    trim_completed(now, keep_count, keep_age, TRIM_LIMIT + #completed)
  end
  if #results > 0 then
    rcall_each('HSET', K_RESULTS, results)
    local z = {}
    local expires = int(now + ttl)
    for r = 1, #results, 2 do
      z[#z + 1] = expires
      z[#z + 1] = results[r]
    end
    rcall_each('ZADD', K_RESULT_EXPIRIES, z)
  end
  local out = lease_reply(now, lease_ms)
  local flags = {}
  for j = 1, adopt_count do
    flags[j] = adopted[j]
  end
  for j = 1, count do
    flags[adopt_count + j] = done[j]
  end
  out[6] = table.concat(flags)
  if lease_count > 0 then
    lease_into(out, lease_count, lease_ms, wid, now, park_ms, by_ref, park_below)
  else
    if (adopt_count > 0 or sweep) and wid ~= '0' then
      -- Its idle wait took something and it has no room to lease: it is parked no longer (adds
      -- would hand it jobs it cannot start, past the pending ones; a lease unparks it too).
      rcall('ZREM', K_PARKED, wid)
      -- A hand-off an add made meanwhile, thinking it parked, goes back to its pending list
      -- unless another worker is parked to pop it.
      unhand_if_none_parked(now)
    end
    -- A wake-up it cannot act on (paused, full, closing), or jobs added with or after a hand-off
    -- it adopted with no room left (that add woke no one else): another worker looks.
    if plain or (adopt_count > 0 and any_pending()) then
      wake()
    end
    if #mine > 0 and rcall('HEXISTS', K_FLOW_CONTROL, 'c') == 1 then
      wake()
    end
  end
  if #mine > 0 and out[7] == '' then
    -- With nothing leased any more the pads go (lease_unpad), looked at after this call's lease:
    -- one that completes the last leased jobs and leases more keeps them (no drop and rewrite).
    lease_unpad()
  end
  metrics_flush(now)
  ev_flush()
  return out
end
return run()
