-- flow_reserve: the first step of a flow add (docs/internals/flows.md): check that no caller id of
-- the flow is taken, and reserve the seqs of its nodes, one range per level of each queue, so that
-- a child can name its parent before the parent is written (flow_add.lua). A reservation not
-- written within the orphan age is dropped by clean() (flow_due.lua). Called with the keys of
-- every queue of the flow on one Redis, with those of one queue per call on a Cluster.
--! keys: per-queue seqCounter callerIds flowReserved
--! argv: queue_count per_queue...
-- per_queue: for each queue, in the order of its keys: id_count, its caller ids, range_count,
-- the size of each range.
-- Returns: { 1, then per range (queue by queue, in order) '<first>:<last>' } when reserved
--   (K_FLOW_RESERVED holds '<first>:<last>:<reserved ms>'); { 0, then queue (1-based) and caller
--   id of each taken id } when nothing was.
local queues = tonumber(ARGV[1])
local now = now_ms()
local taken = {}
local ranges = {}
local i = 1
for q = 1, queues do
  use_queue(q)
  local ids = tonumber(ARGV[i + 1])
  for k = i + 2, i + 1 + ids do
    if flow_id_taken(ARGV[k], now) then
      taken[#taken + 1] = q
      taken[#taken + 1] = ARGV[k]
    end
  end
  i = i + 2 + ids
  ranges[q] = i
  i = i + tonumber(ARGV[i])
end
if #taken > 0 then
  table.insert(taken, 1, 0)
  return taken
end
local out = { 1 }
for q = 1, queues do
  use_queue(q)
  local at = ranges[q]
  for r = at + 1, at + tonumber(ARGV[at]) do
    local size = tonumber(ARGV[r])
    local last = rcall('INCRBY', K_SEQ_COUNTER, size)
    local range = int(last - size + 1) .. ':' .. int(last)
    rcall('ZADD', K_FLOW_RESERVED, last - size + 1, range .. ':' .. int(now))
    out[#out + 1] = range
  end
end
return out
