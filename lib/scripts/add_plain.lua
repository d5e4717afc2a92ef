-- add_plain: store and enqueue a batch of plain jobs, those with neither a caller id, a schedule
-- nor a group (the common add, with fewer keys and commands; add.lua does every other add).
--! keys: seqCounter tokenCounter data dataBuckets meta wake parked leased leaseHolders flowControl rateLog addCallRecords eventLog addedTimes pending*
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
local now = now_ms()
local can_hand, rate_ms = false, false
if hand_ms > 0 then
  local allowed
  allowed, rate_ms = hand_off_allowed(wake_len, now)
  can_hand = allowed ~= nil
end
local hand = nil
local data_args = {}
local meta_args = {}
local pending = {}
local seqs = {}
for j = 1, count do
  local o = first + (j - 1) * 3
  local seq = int(base + j)
  local payload, meta, prio = ARGV[o], ARGV[o + 1], ARGV[o + 2]
  seqs[j] = seq
  data_args[#data_args + 1] = seq
  data_args[#data_args + 1] = payload
  if meta ~= '' then
    meta_args[#meta_args + 1] = seq
    meta_args[#meta_args + 1] = meta
  end
  if can_hand and not hand then
    hand = { seq, payload, meta, prio }
  else
    pend(pending, prio, seq)
  end
end
-- Data first: a write that fails (e.g. on a key of the wrong type) then leaves no wake entry
-- for a job without data.
data_set(data_args)
times_set_added(seqs, now)
if #meta_args > 0 then
  rcall_each('HSET', K_META, meta_args)
end
if hand then
  hand_off(hand[1], hand[2], hand[3], hand[4], now, hand_ms, rate_ms)
end
local placed = push_pending(pending)
if placed and wake_len == 0 and not hand then
  rcall('RPUSH', K_WAKE, '1')
end
emit_jobs('added', seqs, false)
if call ~= '' then
  add_record(call, base, string.rep('1', count))
end
return base
