-- flow_release: a flow add on a Cluster that failed after reserving (refused in another queue, a
-- write that failed) gives back what it reserved in this queue: its claims (flow_reserve.lua), so
-- that the same flow can be added again at once, and its reservations not written, with the
-- notices kept for them (as flow_due.lua drops an orphan's). Best effort: what a failed release
-- leaves lapses with its reservation (the orphan age).
--! keys: flowParent flowReserved flowClaims
--! argv: token claim_count rest...
-- rest: the caller ids the add claimed here (claim_count), then its reservations here
-- ('<first>:<last>').
-- Returns: the number of claims released.
local token, n = ARGV[1], tonumber(ARGV[2])
local released = 0
for k = 3, 2 + n do
  if flow_claim(rcall('HGET', K_FLOW_CLAIMS, ARGV[k])) == token then
    rcall('HDEL', K_FLOW_CLAIMS, ARGV[k])
    released = released + 1
  end
end
for k = 3 + n, #ARGV do
  local m = flow_reservation(ARGV[k])
  if m then
    flow_unreserve(m)
  end
end
return released
