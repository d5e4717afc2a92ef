-- add_plain: store and enqueue a batch of plain jobs, those with neither a caller id, a schedule
-- nor a group (the common add, with fewer keys and commands; add.lua does every other add).
--! keys: by-name seqCounter tokenCounter data dataBuckets meta wake parked leased leaseHolders flowControl rateLog addCallRecords eventLog addedTimes pending
--! argv: priorities handoff_lease_ms count call record_ttl_ms ack_count acked_calls*ack_count
--! argv: jobs...
--! cold: hand_off_allowed hand_off data_set_run rcall_each
-- The arguments of add.lua, but per job only its payload, meta (JSON, '' = none) and priority;
-- or, when no job has meta and all have the one priority ARGV[1] names (the common call), only
-- their payloads (count arguments, not 3 × count: the producer builds and Redis reads a third).
-- Idempotent and handing off as add.lua does (the same call record, lib/scripts/lib/adding.lua:
-- read first, written last, so a run that fails leaves none and a re-send runs again).
-- Returns: the seq base: the jobs are seqs base + 1 .. base + count, in order, all new.
-- The definitions of `--! cold:` are made by load_cold() (lib/scripts/library.ts, coldParts) on
-- the paths that use them: not on the common one, one job with a wake-up waiting or no worker
-- parked.
-- (The arguments' common values are compared as strings: tonumber is a strtod, ~1k Redis
-- instructions each.)
local count = ARGV[3] == '1' and 1 or tonumber(ARGV[3])
local call = ARGV[4]
local first = ARGV[6] == '0' and 7 or 7 + tonumber(ARGV[6])
-- Per job 1 argument (its payload) or 3 (payload, meta, priority).
local width = #ARGV - first + 1 == count and 1 or 3
-- A run before (a re-send): its answer. (Every job of a run is new: its record is its base.)
if call ~= '' then
  local done = rcall('HGET', K_ADD_CALL_RECORDS, call)
  if done then
    return tonumber(string.match(done, '^(%d+):'))
  end
end
local wake_len = rcall('LLEN', K_WAKE)
-- (ARGV[3], not count: a number goes to Redis formatted as %.17g, ~3k instructions.)
local base = rcall('INCRBY', K_SEQ_COUNTER, ARGV[3]) - count
-- The common call is one job, or jobs of one priority: the loop builds only the tables the
-- commands take, none for one job (this script runs for every plain add: docs/performance.md,
-- "What limits us").
-- (Inline, not in a function run by pcall: its closure alone cost ~11k of ~155k Redis
-- instructions a call; a failed write fails the script before the record below is written.)
do
  local seqs, data_args, meta_args = nil, nil, nil
  if count == 1 then
    seqs = int(base + 1)
  else
    data_args, seqs = {}, {}
    for j = 1, count do
      local o = first + (j - 1) * width
      local seq = int(base + j)
      seqs[j] = seq
      data_args[2 * j - 1] = seq
      data_args[2 * j] = ARGV[o]
      if width == 3 and ARGV[o + 1] ~= '' then
        meta_args = meta_args or {}
        meta_args[#meta_args + 1] = seq
        meta_args[#meta_args + 1] = ARGV[o + 1]
      end
    end
  end
  -- The 'added' event first: its entry id's ms is Redis time, the jobs' added time (with events
  -- off, TIME): one command fewer than TIME and the event (~11k of ~149k Redis instructions a
  -- call). It is the first write, so an add refused (out of memory; a key of ours of the wrong
  -- type, this one included) writes nothing; a later write can fail only on a key of ours of the
  -- wrong type, leaving an event of a job that is not there: written by hand, not by the queue.
  local id = emit_seqs('added', seqs)
  -- (Its ms as a string too, for the commands that take it: no number formatted.)
  local now_s = id and string.sub(id, 1, string.find(id, '-', 1, true) - 1)
  local now = now_s and tonumber(now_s) or now_ms()
  -- The first job may be handed off when no wake-up waits and a worker is parked.
  -- (hand_off_allowed's look at the parked set, made here: the busy case, no wake-up waiting
  -- and no worker parked, then needs no cold definitions.)
  -- (Not past jobs of its priority already pending: they were added first.)
  local parked = ARGV[2] ~= '0'
    and wake_len == 0
    and #rcall('ZRANGEBYSCORE', K_PARKED, now_s or int(now), '+inf', 'LIMIT', '0', '1') > 0
    and rcall('LLEN', pending_key(width == 3 and ARGV[first + 2] or ARGV[1])) == 0
  -- Several jobs, or a hand-off that may be allowed: the cold definitions (not for an add while
  -- the workers are busy: no wake-up waits, none is parked).
  if count > 1 or parked then
    load_cold()
  end
  local hand, rate_ms = nil, false
  if parked then
    local allowed
    allowed, rate_ms = hand_off_allowed(wake_len, now, true)
    if allowed then
      hand = 1 -- (its position)
    end
  end
  -- Data before the pending list and the wake list: a write that fails (e.g. on a key of the
  -- wrong type) then leaves no entry of a job without data.
  -- (One job: its bucket's name made once, for its payload and its times.)
  local bucket
  if count == 1 then
    bucket = int((base + 1 - (base + 1) % DATA_SPAN) / DATA_SPAN)
    data_set_one(seqs, ARGV[first], bucket)
    if width == 3 and ARGV[first + 1] ~= '' then
      rcall('HSET', K_META, seqs, ARGV[first + 1])
    end
  else
    data_set_run(base, data_args)
  end
  times_set_added_run(base, count, u48_bytes(now), hand, bucket)
  if meta_args then
    rcall_each('HSET', K_META, meta_args)
  end
  local first_seq = count == 1 and seqs or seqs[1]
  if hand then
    -- (Its meta and priority: width 1, none and the call's one.)
    local meta, prio = '', ARGV[1]
    if width == 3 then
      meta, prio = ARGV[first + 1], ARGV[first + 2]
    end
    hand_off(first_seq, ARGV[first], meta, prio, now, tonumber(ARGV[2]), rate_ms)
  end
  local from = hand and 2 or 1
  if from <= count then
    if count == 1 then
      rcall('RPUSH', pending_key(ARGV[1]), seqs)
    else
      -- Per priority used (ARGV[1]: their digits), its jobs in order: the common call has one.
      for d = 1, #ARGV[1] do
        local p = string.sub(ARGV[1], d, d)
        local list = seqs
        if #ARGV[1] > 1 then
          list = {}
          for j = from, count do
            -- (Several priorities: width 3.)
            if ARGV[first + (j - 1) * 3 + 2] == p then
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
    end
    if wake_len == 0 and not hand then
      rcall('RPUSH', K_WAKE, '1')
    end
  end
end
if call ~= '' then
  add_record(call, base, string.rep('1', count))
end
return base
