-- flow_reserve: the first step of a flow add (docs/internals/flows.md): check that no caller id of
-- the flow is taken, and reserve the seqs of its nodes, one range per level of each queue, so that
-- a child can name its parent before the parent is written (flow_add.lua). A reservation not
-- written within the orphan age is dropped by clean() (flow_due.lua). Called with the keys of
-- every queue of the flow on one Redis, with those of one queue per call on a Cluster, where the
-- queues of the roots go first and claim their roots' caller ids for the add (token): an id
-- claimed by another add counts as taken until its root is written or the add is released
-- (flow_release.lua), for claim_ms at most, and only while the reservation it names exists.
--! keys: per-queue seqCounter callerIds flowReserved flowClaims
--! argv: queue_count token claim_ms per_queue...
-- token: the add's own ('' on one Redis: no claims). per_queue: for each queue, in the order of
-- its keys: id_count, its caller ids, claim_count, the ids to claim (its roots'), range_count, the
-- size of each range (the roots' level last: the claims name that range; none: check only).
-- Returns: { 1, then per range (queue by queue, in order) '<first>:<last>' } when reserved
--   (K_FLOW_RESERVED holds '<first>:<last>:<reserved ms>'; K_FLOW_CLAIMS id -> '<token>\t<range>\t<ms>');
--   { 0, then queue (1-based), caller id and t (taken) or c (claimed by another add) of each }
--   when nothing was.
local queues, token, claim_ms = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local now = now_ms()
local taken = {}
local at = {}
local i = 3
for q = 1, queues do
  use_queue(q)
  local claims = rcall('EXISTS', K_FLOW_CLAIMS) == 1
  local ids = tonumber(ARGV[i + 1])
  for k = i + 2, i + 1 + ids do
    local cid = ARGV[k]
    local why = flow_id_taken(cid, now) and 't' or nil
    if not why and claims then
      local by, range, ms = flow_claim(rcall('HGET', K_FLOW_CLAIMS, cid))
      if by and by ~= token and now - ms <= claim_ms and flow_reservation(range) then
        why = 'c'
      end
    end
    if why then
      taken[#taken + 1] = q
      taken[#taken + 1] = cid
      taken[#taken + 1] = why
    end
  end
  i = i + 2 + ids
  at[q] = i
  i = i + 1 + tonumber(ARGV[i])
  i = i + tonumber(ARGV[i])
end
if #taken > 0 then
  table.insert(taken, 1, 0)
  return taken
end
local out = { 1 }
for q = 1, queues do
  use_queue(q)
  local c = at[q]
  local r = c + 1 + tonumber(ARGV[c])
  local range
  for s = r + 1, r + tonumber(ARGV[r]) do
    local size = tonumber(ARGV[s])
    local last = rcall('INCRBY', K_SEQ_COUNTER, size)
    range = int(last - size + 1) .. ':' .. int(last)
    rcall('ZADD', K_FLOW_RESERVED, last - size + 1, range .. ':' .. int(now))
    out[#out + 1] = range
  end
  if token ~= '' and range then
    for k = c + 1, c + tonumber(ARGV[c]) do
      rcall('HSET', K_FLOW_CLAIMS, ARGV[k], token .. '\t' .. range .. '\t' .. int(now))
    end
  end
end
return out
