-- flow_add: write the nodes of a flow whose seqs flow_reserve.lua reserved, per block (one level of
-- one queue), the deepest level first, so that a parent is written only after every child it
-- awaits (docs/internals/flows.md). On one Redis the whole flow is one call (all or nothing); on
-- a Cluster one call per block. A leaf waits in its pending list (or the delayed set); a parent
-- waits for its children (K_WAITING_CHILDREN, its key d), then applies the notices of children
-- that ended before it was written. A block whose reservation is gone was written before (a
-- call sent again after its reply was lost): skipped.
--! keys: per-queue pending data dataBuckets meta callerIds delayed leased leaseHolders dead wake progress waitingChildren flowParent flowOutbox flowOutboxAt flowCancels flowReserved eventLog addedTimes jobLogs metricsCompleted metricsFailed metricsDead flowClaims
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: block_count blocks...
-- blocks: per block its queue (1-based, in the order of the keys), its reservation
-- ('<first>:<last>', as flow_reserve replied), node_count, then per node: seq, caller_id ('' = none), payload,
-- meta (JSON, '' = none), priority, delay_ms (a leaf's; '' = none), child_count, then per child
-- its key '<queue>:<seq>' and its entry (policy f|i|r then its public id).
-- Returns: { 1, then the tail of flow_out_reply } written; { 2 } every block was written before;
--   { 0, then block and node (1-based) of each caller id taken } nothing written.
local now = now_ms()
local blocks = {}
local i = 1
for b = 1, tonumber(ARGV[1]) do
  local blk = { q = tonumber(ARGV[i + 1]), res = ARGV[i + 2], nodes = {} }
  i = i + 3
  for k = 1, tonumber(ARGV[i]) do
    -- ARGV[at] seq, +1 caller id, +2 payload, +3 meta, +4 priority, +5 delay, +6 child count
    local at = i + 1
    blk.nodes[k] = at
    i = at + 6 + 2 * tonumber(ARGV[at + 6])
  end
  blocks[b] = blk
end
-- The metas of a block's nodes (`nodes`: their ARGV indexes), as its events list them: every
-- node ('added'), the delayed leaves, the parents.
local function flow_add_raws(nodes)
  local all, delayed, parents = {}, {}, {}
  for k, at in ipairs(nodes) do
    local meta, delay = ARGV[at + 3], ARGV[at + 5]
    all[k] = meta
    if tonumber(ARGV[at + 6]) > 0 then
      parents[#parents + 1] = meta
    elseif delay ~= '' and tonumber(delay) > 0 then
      delayed[#delayed + 1] = meta
    end
  end
  return all, delayed, parents
end
local taken, live = {}, 0
for b, blk in ipairs(blocks) do
  use_queue(blk.q)
  blk.res = flow_reservation(blk.res)
  if blk.res then
    blk.live = true
    live = live + 1
    for k, at in ipairs(blk.nodes) do
      if ARGV[at + 1] ~= '' and flow_id_taken(ARGV[at + 1], now) then
        taken[#taken + 1] = b
        taken[#taken + 1] = k
      end
    end
  end
end
if #taken > 0 then
  table.insert(taken, 1, 0)
  return taken
end
if live == 0 then
  return { 2 }
end
for _, blk in ipairs(blocks) do
  if blk.live then
    use_queue(blk.q)
    rcall('ZREM', K_FLOW_RESERVED, blk.res)
    -- Its roots' claims (flow_reserve.lua, on a Cluster) end: their ids are taken now.
    local claims = rcall('EXISTS', K_FLOW_CLAIMS) == 1
    local data_args, meta_args, pending, gpend, delayed, waiting = {}, {}, {}, {}, {}, {}
    local added, delayed_ids, parents, parent_ids = {}, {}, {}, {}
    local any_group = false
    for _, at in ipairs(blk.nodes) do
      local seq, cid, meta, delay = ARGV[at], ARGV[at + 1], ARGV[at + 3], ARGV[at + 5]
      local id = cid ~= '' and cid or seq
      local g = meta_group(meta)
      any_group = any_group or g ~= nil
      if cid ~= '' then
        rcall('HSET', K_CALLER_IDS, cid, seq)
        if claims then
          rcall('HDEL', K_FLOW_CLAIMS, cid)
        end
      end
      data_args[#data_args + 1] = seq
      data_args[#data_args + 1] = ARGV[at + 2]
      if meta ~= '' then
        meta_args[#meta_args + 1] = seq
        meta_args[#meta_args + 1] = meta
      end
      added[#added + 1] = id
      local children = tonumber(ARGV[at + 6])
      if children > 0 then
        local awaited = {}
        for c = at + 7, at + 6 + 2 * children do
          awaited[#awaited + 1] = ARGV[c]
        end
        rcall_each('HSET', flow_pkey('d', seq), awaited)
        -- Scored by its seq: listed in the order parents were added (a score of the ms tied
        -- the parents of a call, which ZRANGE then ordered as strings: 1, 10, 11, 2, …).
        waiting[#waiting + 1] = seq
        waiting[#waiting + 1] = seq
        parents[#parents + 1] = seq
        parent_ids[#parent_ids + 1] = id
      elseif delay ~= '' and tonumber(delay) > 0 then
        delayed[#delayed + 1] = now + tonumber(delay)
        delayed[#delayed + 1] = seq
        delayed_ids[#delayed_ids + 1] = id
      else
        if g then
          group_pend(gpend, g, ARGV[at + 4], seq)
        else
          pend(pending, ARGV[at + 4], seq)
        end
      end
    end
    data_set(data_args)
    times_added_pairs(data_args, now)
    if #meta_args > 0 then
      rcall_each('HSET', K_META, meta_args)
    end
    if #waiting > 0 then
      rcall_each('ZADD', K_WAITING_CHILDREN, waiting)
    end
    if #delayed > 0 then
      schedule(delayed)
    end
    local placed = push_pending(pending)
    if #gpend > 0 and group_push(gpend, now) then
      placed = true
    end
    if placed then
      wake()
    end
    if EV_ON and any_group then
      -- Grouped jobs' events carry their groups (docs/groups.md): the metas, in the order of the
      -- ids (collected only here: an ungrouped block pays nothing for them).
      local raws, delayed_raws, parent_raws = flow_add_raws(blk.nodes)
      emit_jobs('added', added, raws)
      emit_jobs('delayed', delayed_ids, delayed_raws)
      emit_jobs('waiting-children', parent_ids, parent_raws)
    else
      emit_jobs('added', added, false)
      emit_jobs('delayed', delayed_ids, false)
      emit_jobs('waiting-children', parent_ids, false)
    end
    for _, seq in ipairs(parents) do
      flow_apply_early(seq, now)
    end
    -- (A parent an early notice dead-lettered counts in this queue's metrics.)
    metrics_flush(now)
  end
end
return flow_out_reply({ 1 })
