-- add_plain: store and enqueue a batch of plain jobs, those with neither a caller id nor a
-- schedule (the common add, with fewer keys and commands; add.lua does every other add).
--! keys: groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! keys: seqCounter tokenCounter data dataBuckets meta wake parked leased leaseHolders flowControl rateLog addCallRecords eventLog pending*
--! argv: priorities handoff_lease_ms count call record_ttl_ms ack_count acked_calls*ack_count
--! argv: jobs(payload meta priority)*count
-- The arguments of add.lua, but per job only its payload, meta (JSON, '' = none) and priority.
-- Idempotent and handing off as add.lua does (the same call record, lib/scripts/lib/adding.lua).
-- Returns: the seq base: the jobs are seqs base + 1 .. base + count, in order, all new.
local hand_ms = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
local call = ARGV[4]
local first = 7 + tonumber(ARGV[6])
if call ~= '' then
  local done = rcall('HGET', K_ADD_CALL_RECORDS, call)
  if done then
    return tonumber(string.match(done, '^(%d+):'))
  end
end
local base = rcall('INCRBY', K_SEQ_COUNTER, count) - count
local wake_len = rcall('LLEN', K_WAKE)
local now, rate_ms = nil, false
if hand_ms > 0 then
  now, rate_ms = hand_off_allowed(wake_len, nil)
end
local hand = nil
local data_args = {}
local meta_args = {}
local pending = {}
local gpend = {} -- grouped jobs (group_pend)
local seqs = {}
for j = 1, count do
  local o = first + (j - 1) * 3
  local seq = int(base + j)
  local payload, meta, prio = ARGV[o], ARGV[o + 1], ARGV[o + 2]
  local g = nil
  seqs[j] = seq
  data_args[#data_args + 1] = seq
  data_args[#data_args + 1] = payload
  if meta ~= '' then
    meta_args[#meta_args + 1] = seq
    meta_args[#meta_args + 1] = meta
    g = meta_group(meta)
  end
  if now and not hand and (not g or group_may_hand(g, gpend, now)) then
    hand = { seq, payload, meta, prio, g }
  elseif g then
    group_pend(gpend, g, prio, seq)
  else
    pend(pending, prio, seq)
  end
end
-- Data first: a write that fails (e.g. on a key of the wrong type) then leaves no wake entry
-- for a job without data.
data_set(data_args)
if #meta_args > 0 then
  rcall_each('HSET', K_META, meta_args)
end
if hand then
  local token = hand_off(hand[1], hand[2], hand[3], hand[4], now, hand_ms, rate_ms)
  if hand[5] then
    group_handed(hand[5], token, now)
  end
end
local placed = push_pending(pending)
if #gpend > 0 and group_push(gpend, now) then
  placed = true
end
if placed and wake_len == 0 and not hand then
  rcall('RPUSH', K_WAKE, '1')
end
-- Grouped jobs' events carry their groups (from their meta).
local raws = false
if EV_CAP > 0 and (#gpend > 0 or (hand and hand[5])) then
  raws = {}
  for j = 1, count do
    raws[j] = ARGV[first + (j - 1) * 3 + 1]
  end
end
emit_jobs('added', seqs, raws)
if call ~= '' then
  add_record(call, base, string.rep('1', count))
end
return base
