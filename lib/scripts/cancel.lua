-- cancel: the job stops existing, wherever it is. A holder is told on the notice channel
-- ('c:<seq>:<token>:<holder>:<ack_id>'), and acknowledges (lib/worker) once it will never start
-- the job; the canceller waits for that acknowledgement so that no handler starts after cancel
-- resolved.
--! keys: data dataBuckets meta callerIds delayed leased leaseHolders dead workers wake progress noticeChannel heartbeatRecord eventLog waitingChildren flowParent flowOutbox flowOutboxAt flowCancels addedTimes jobLogs completedJobs
--! keys: cancelledLeases cancelCall
--! keys: groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: id ack_id heartbeat_timeout_ms ack_ttl_ms
-- id: the job's public id; ack_id: names the holder's acknowledgement (lib/queue/cancel-acks.ts);
-- ack_ttl_ms: how long a holder that missed the notice may still acknowledge (the canceller's
-- wait at least).
-- Returns: 0 no such job, 1 cancelled, 2 cancelled and a live holder was told (wait for its
--   acknowledgement); plus 10 when it was a flow job (its notice or its children's cancels
--   wait for delivery: lib/scripts/lib/flows.lua). A cancel that did something keeps its answer
--   for ack_ttl_ms (K_CANCEL_CALL, named by its ack_id): the same call re-sent after its reply
--   was lost answers it again, not "no such job".
local named = ARGV[2] ~= '' -- (an unnamed call keeps no answer: K_CANCEL_CALL would be shared)
local answered = named and rcall('GET', K_CANCEL_CALL)
if answered then
  return tonumber(answered)
end
local seq = resolve(ARGV[1])
if not seq then
  return 0
end
local lease = rcall('HGET', K_LEASE_HOLDERS, seq)
local wait = false
if lease then
  local token, holder = string.match(lease, '^([^:]+):(.+)$')
  if holder == 'h' then
    -- Still in the wake list: nobody has it. Else a worker moved it into its hand-off list.
    local h = parse_hand(rcall('LINDEX', K_WAKE, 0))
    if h and h.seq == seq then
      rcall('LPOP', K_WAKE)
    else
      wait = true
    end
  elseif holder ~= '0' then
    local now = now_ms()
    wait = not lapsed(rcall('ZSCORE', K_WORKERS, holder), now, tonumber(ARGV[3]))
  end
  -- A holder whose notice channel is down learns the cancel at its next renewal: the renewal
  -- answers this acknowledgement id (extend_leases.lua), and the holder acknowledges then; or,
  -- its run ended meanwhile, when its outcome is refused (lib/worker/cancels.ts endedLost). A
  -- worker that popped the hand-off and started it before adopting it does the same.
  if wait and token and ARGV[2] ~= '' then
    rcall('SET', K_CANCELLED_LEASES .. ':' .. token, ARGV[2], 'PX', ARGV[4])
  end
  rcall('PUBLISH', K_NOTICE_CHANNEL, 'c:' .. seq .. ':' .. (token or '') .. ':' .. (holder or '') .. ':' .. ARGV[2])
end
local meta = decode_meta(rcall('HGET', K_META, seq))
flow_job_ended(seq, meta, 'x', 'cancelled', nil)
destroy(seq, meta)
emit('cancelled', ARGV[1], ev_group(meta))
local answer = (wait and 2 or 1) + flow_wrote()
if named then
  rcall('SET', K_CANCEL_CALL, answer, 'PX', ARGV[4])
end
return answer
