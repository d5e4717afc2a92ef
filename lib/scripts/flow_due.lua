-- flow_due: the flow work this queue has left over (docs/internals/flows.md), for clean(), repair()
-- and whoever just ended flow jobs (cancel, drain): notices of its children not delivered yet,
-- notices delivered once and due for their second delivery, children of its parents to cancel;
-- and it drops reservations of flow adds older than orphan_ms (a producer that died between
-- reserving and writing) with the notices kept for them and the claims that named them.
--! keys: flowParent flowOutbox flowOutboxAt flowRechecks flowCancels flowReserved flowClaims
--! argv: mode:due|now|all grace_ms orphan_ms limit
-- due (clean): notices and cancels older than grace_ms (younger ones are being delivered by the
-- job's worker), second deliveries that are due; now (after cancel, drain): every notice not
-- delivered yet and every cancel, no second delivery; all (repair): everything.
-- Returns: { u, then seq, notice × u (first deliveries), r, then seq, notice × r (second), c,
--   then '<queue>:<seq>' × c (cancels), reservations dropped }.
local mode, grace, orphan, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local now = now_ms()
local out = {}
-- Entries of zset `key` up to score `max` with their notices (an entry without one is dropped).
local function notices(key, max)
  local seqs = rcall('ZRANGEBYSCORE', key, '-inf', max, 'LIMIT', 0, limit)
  local got = #seqs > 0 and hmget(K_FLOW_OUTBOX, seqs) or {}
  local at = #out + 1
  out[at] = 0
  for i, seq in ipairs(seqs) do
    if got[i] then
      out[#out + 1] = seq
      out[#out + 1] = got[i]
      out[at] = out[at] + 1
    else
      rcall('ZREM', key, seq)
    end
  end
end
notices(K_FLOW_OUTBOX_AT, mode == 'due' and now - grace or '+inf')
if mode == 'now' then
  out[#out + 1] = 0
else
  notices(K_FLOW_RECHECKS, mode == 'due' and now or '+inf')
end
local cancels = rcall('ZRANGEBYSCORE', K_FLOW_CANCELS, '-inf', mode == 'due' and now - grace or '+inf', 'LIMIT', 0, limit)
out[#out + 1] = #cancels
for _, m in ipairs(cancels) do
  out[#out + 1] = m
end
local dropped = 0
if mode ~= 'now' then
  for _, r in ipairs(rcall('ZRANGE', K_FLOW_RESERVED, 0, limit - 1)) do
    local at = string.match(r, '^%d+:%d+:(%d+)$')
    if not at or now - tonumber(at) > orphan then
      flow_unreserve(r)
      dropped = dropped + 1
    end
  end
  -- Claims whose reservation is gone (their add died before writing its roots) go with it.
  if dropped > 0 and rcall('EXISTS', K_FLOW_CLAIMS) == 1 then
    local claims = rcall('HGETALL', K_FLOW_CLAIMS)
    for k = 1, #claims, 2 do
      local _, range = flow_claim(claims[k + 1])
      if not flow_reservation(range or '') then
        rcall('HDEL', K_FLOW_CLAIMS, claims[k])
      end
    end
  end
end
out[#out + 1] = dropped
return out
