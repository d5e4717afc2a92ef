-- add_plain: store and enqueue a batch of plain jobs, those with neither a caller id, a schedule
-- nor a group (the common add, with fewer keys and commands; add.lua does every other add).
--! keys: seqCounter tokenCounter data dataBuckets meta wake parked leased leaseHolders flowControl rateLog addCallRecords eventLog addedTimes pending*
--! argv: priorities handoff_lease_ms count call record_ttl_ms ack_count acked_calls*ack_count
--! argv: jobs(payload meta priority)*count
-- The arguments of add.lua, but per job only its payload, meta (JSON, '' = none) and priority.
-- Idempotent and handing off as add.lua does (the same call record, lib/scripts/lib/adding.lua,
-- claimed first: one HSETNX; a run that fails takes its claim back).
-- Returns: the seq base: the jobs are seqs base + 1 .. base + count, in order, all new.
local hand_ms = tonumber(ARGV[2])
local count = tonumber(ARGV[3])
local call = ARGV[4]
local first = 7 + tonumber(ARGV[6])
local base = rcall('INCRBY', K_SEQ_COUNTER, count) - count
-- Every job is new: the call's record is known now, and claiming it is also the check for a
-- run before (then this run takes back its seqs and answers that run's base).
if call ~= '' then
  local done = add_claim(call, base, string.rep('1', count))
  if done then
    rcall('INCRBY', K_SEQ_COUNTER, -count) -- (INCRBY: no other command for a queue's ACL)
    return tonumber(string.match(done, '^(%d+):'))
  end
end
-- The common call is one job, or jobs of one priority: the loop builds only the tables the
-- commands take (this script runs for every plain add: docs/performance.md, "What limits us").
local function store()
  local wake_len = rcall('LLEN', K_WAKE)
  local now = now_ms()
  -- The first job is handed off when a worker waits for one (hand = its position, 1).
  local hand, rate_ms = nil, false
  if hand_ms > 0 then
    local allowed
    allowed, rate_ms = hand_off_allowed(wake_len, now)
    if allowed then
      hand = 1
    end
  end
  local data_args, seqs, meta_args = {}, {}, nil
  for j = 1, count do
    local o = first + (j - 1) * 3
    local seq = int(base + j)
    seqs[j] = seq
    data_args[2 * j - 1] = seq
    data_args[2 * j] = ARGV[o]
    if ARGV[o + 1] ~= '' then
      meta_args = meta_args or {}
      meta_args[#meta_args + 1] = seq
      meta_args[#meta_args + 1] = ARGV[o + 1]
    end
  end
  -- Data first: a write that fails (e.g. on a key of the wrong type) then leaves no wake entry
  -- for a job without data.
  data_set_run(base, data_args)
  times_set_added_run(base, count, now, hand)
  if meta_args then
    rcall_each('HSET', K_META, meta_args)
  end
  if hand then
    hand_off(seqs[1], ARGV[first], ARGV[first + 1], ARGV[first + 2], now, hand_ms, rate_ms)
  end
  local from = hand and 2 or 1
  if from <= count then
    -- Per priority used (ARGV[1]: their digits), its jobs in order: the common call has one.
    for d = 1, #ARGV[1] do
      local p = tonumber(string.sub(ARGV[1], d, d))
      local list = seqs
      if #ARGV[1] > 1 then
        list = {}
        for j = from, count do
          if tonumber(ARGV[first + (j - 1) * 3 + 2]) == p then
            list[#list + 1] = seqs[j]
          end
        end
      end
      local i, last = #ARGV[1] > 1 and 1 or from, #list
      while i <= last do
        rcall('RPUSH', pending_key(p), unpack(list, i, math.min(i + CHUNK - 1, last)))
        i = i + CHUNK
      end
    end
    if wake_len == 0 and not hand then
      rcall('RPUSH', K_WAKE, '1')
    end
  end
  emit_seqs('added', seqs)
end
-- A write that fails leaves the call unclaimed: a re-send runs it again, as the first run would
-- have been answered (with the error).
local ok, err = pcall(store)
if not ok then
  if call ~= '' then
    add_unclaim(call)
  end
  -- The failed command's own error (e.g. WRONGTYPE), as a script raising it would answer.
  local message = type(err) == 'table' and err.err or tostring(err)
  if string.match(message, '^[A-Z]+ ') then
    return redis.error_reply(message)
  end
  error(err, 0)
end
return base
