-- reconcile_worker: after a connection of the worker dropped, match what Redis says it holds
-- with what it knows. A lease or hand-off call whose reply was lost (or was run twice by a client
-- that re-sent it) leaves jobs held by a worker that does not know it holds them; they would
-- wait for their lease to lapse. Those go back at the FRONT at once, no attempt or expiry
-- counted.
--! keys: pending meta leased leaseHolders wake workerLeases workerHandoffs eventLog rateLog
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: worker_id known_tokens...
-- known_tokens: the tokens of every job the worker knows it holds (running, buffered, handed
--   off to it).
-- Returns: { leases given back, hand-offs given back }.
local wid = ARGV[1]
local known = {}
for i = 2, #ARGV do
  known[ARGV[i]] = true
end
local held = rcall('SMEMBERS', K_WORKER_LEASES)
local lost = {}
if #held > 0 then
  local tokens = hmget(K_LEASE_HOLDERS, held)
  for i, seq in ipairs(held) do
    if held_by(tokens[i], wid) then
      local token = string.sub(tokens[i], 1, -(#wid + 2))
      if not known[token] then
        lost[#lost + 1] = { seq, token }
      end
    else
      rcall('SREM', K_WORKER_LEASES, seq)
    end
  end
end
-- First leased ends up first in line.
in_lease_order(lost)
for i = #lost, 1, -1 do
  local seq = lost[i][1]
  rcall('ZREM', K_LEASED, seq)
  rcall('HDEL', K_LEASE_HOLDERS, seq)
  lease_unpad()
  rcall('SREM', K_WORKER_LEASES, seq)
  local meta = decode_meta(rcall('HGET', K_META, seq))
  if meta.g then
    group_run_ended(meta.g, nil)
  end
  requeue(seq, meta, true)
  lost[i] = seq
end
emit_jobs('released', lost)
local keep, unhanded, plain = {}, 0, false
for _, e in ipairs(rcall('LRANGE', K_WORKER_HANDOFFS, 0, -1)) do
  local h = parse_hand(e)
  plain = plain or not h
  if h and hand_live(h) then
    if known[h.token] then
      keep[#keep + 1] = e
    else
      unhand(h, false)
      unhanded = unhanded + 1
    end
  end
end
keep_handoffs(keep)
-- (A plain wake-up its cut wait took is passed on: the worker may not lease next.)
if #lost > 0 or plain then
  wake()
end
return { #lost, unhanded }
