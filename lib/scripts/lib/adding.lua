-- What the add scripts share (add.lua, add_plain.lua): the record of an add call that makes a
-- re-send idempotent, the hand-off of a new job to a parked worker (docs/internals/hand-off.md), and the
-- new jobs' pending lists.

-- The producer's record hash (K_ADD_CALL_RECORDS) after this call's record is in: drop the
-- records of its earlier calls whose replies arrived, and keep the hash record_ttl_ms more
-- (0: as it is; the producer sends it until a call that sent it is answered, then every
-- twelfth of it, so a record outlives any re-send of its call). Reads the arguments both add scripts start with
-- (`--! argv: priorities handoff_lease_ms count call record_ttl_ms ack_count
-- acked_calls*ack_count`): ack_count ARGV[6], acked_calls ARGV[7..], record_ttl_ms ARGV[5].
local function add_records_tidy()
  if ARGV[6] ~= '0' then
    rcall('HDEL', K_ADD_CALL_RECORDS, unpack(ARGV, 7, 6 + tonumber(ARGV[6])))
  end
  if ARGV[5] ~= '0' then
    rcall('PEXPIRE', K_ADD_CALL_RECORDS, ARGV[5])
  end
end

-- Record what add call number `call` did ('<seq base>:<flag per job>', for a re-send after a
-- lost reply), once it is done: a run that failed on the way leaves no record, and its re-send
-- runs again. Both add scripts read the record first (HGET: a re-send answers it).
local function add_record(call, base, flags)
  rcall('HSET', K_ADD_CALL_RECORDS, call, int(base) .. ':' .. flags)
  add_records_tidy()
end

-- Whether a job that runs now may be handed off: a worker is parked (its parked-until is in the
-- future; `parked`: true when the caller found one already), no wake-up waits (`wake_len`, the
-- wake list's length, is 0) and flow control allows a lease now. Returns Redis time (`now`,
-- read if nil) and the rate window (false: no rate limit) when it may, else nil.
local function hand_off_allowed(wake_len, now, parked)
  if wake_len > 0 then
    return nil
  end
  now = now or now_ms()
  -- (One command whether or not a worker is parked: no ZCARD first.)
  if not parked and #rcall('ZRANGEBYSCORE', K_PARKED, now, '+inf', 'LIMIT', 0, 1) == 0 then
    return nil
  end
  local allowed, _, _, rate_ms = leases_allowed(now, 1)
  if allowed == 0 then
    return nil
  end
  return now, rate_ms
end

-- Hand job `seq` off: lease it to holder 'h' until now + hand_ms and push it whole to the wake list
-- (a hand-off counts as a lease for a rate limit of window rate_ms). Returns its lease token.
-- The entry's head ends with the job's added time (the add's `now`), also its start: the caller
-- records that start in the job's times (add_plain.lua with its added time, times_set_added_run;
-- add.lua with times_set_started).
local function hand_off(seq, payload, meta, prio, now, hand_ms, rate_ms)
  local token = int(rcall('INCR', K_TOKEN_COUNTER))
  -- (Numbers formatted with int: a number given to Redis or joined to a string is formatted
  -- with %.17g or %.14g, ~3k Redis instructions each, %d ~1k.)
  local deadline = int(now + hand_ms)
  rcall('ZADD', K_LEASED, deadline, seq)
  rcall('HSET', K_LEASE_HOLDERS, seq, token .. ':h')
  if rate_ms then
    log_lease_starts(now, { token }, rate_ms)
  end
  local head = 'h' .. seq .. ':' .. token .. ':' .. deadline .. ':' .. prio .. ':'
  rcall('RPUSH', K_WAKE, head .. (meta == '' and '0' or int(#meta)) .. ':' .. int(now) .. '\n' .. meta .. payload)
  return token
end

-- Note job `seq` for the pending list of priority prio (a digit); pending: priority -> seqs.
local function pend(pending, prio, seq)
  local p = tonumber(prio)
  local list = pending[p]
  if not list then
    list = {}
    pending[p] = list
  end
  list[#list + 1] = seq
end

-- Push the noted jobs to their pending lists, in order; true when there were any.
local function push_pending(pending)
  local placed = false
  for p = 0, 9 do
    local list = pending[p]
    if list then
      rcall_each('RPUSH', pending_key(p), list)
      placed = true
    end
  end
  return placed
end
