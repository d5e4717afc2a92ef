-- Flows, the parent's side (docs/internals/flows.md): what a child's notice does to its parent, in
-- the parent's queue (flow_notice.lua, and flow_add.lua for notices that came early).

-- Whether seq `seq` is reserved by a flow add that has not written it yet (K_FLOW_RESERVED holds
-- '<first>:<last>:<reserved ms>' scored by first).
local function flow_reserved(seq)
  local r = rcall('ZREVRANGEBYSCORE', K_FLOW_RESERVED, seq, '-inf', 'LIMIT', 0, 1)[1]
  local last = r and tonumber(string.match(r, '^%d+:(%d+):'))
  return last ~= nil and tonumber(seq) <= last
end

-- Parent `pseq` awaits no child any more: it becomes pending (or delayed by its meta W).
local function flow_parent_ready(pseq, now)
  if rcall('ZREM', K_WAITING_CHILDREN, pseq) == 0 then
    return
  end
  local meta = decode_meta(rcall('HGET', K_META, pseq))
  if meta.W and meta.W > 0 then
    schedule({ now + meta.W, pseq })
    emit('delayed', meta.i or pseq, ev_group(meta))
  else
    requeue(pseq, meta, false)
    wake()
    emit('promoted', meta.i or pseq, ev_group(meta))
  end
end

-- A child failed waiting parent `pseq` (policy fail-parent): it is dead-lettered with `reason`
-- (to_dead tells its own parent, and cancels the children it still awaited).
local function flow_parent_failed(pseq, reason, now)
  if not rcall('ZSCORE', K_WAITING_CHILDREN, pseq) then
    return
  end
  local meta = decode_meta(rcall('HGET', K_META, pseq))
  -- (It never ran: no worker nor start; its added time, and its group, as a job's 'failed' has.)
  local added = EV_ON and times_get({ pseq })[1] or 0
  emit('failed', meta.i or pseq, 'a', meta.a or 0, 'r', '0', 'err', ev_text(reason), 'ta', added, ev_group(meta))
  -- The dead-letter set is trimmed by the parent queue's next clean() or dead-lettering (its
  -- maxDead is not known here).
  to_dead(pseq, meta, reason, now, math.huge)
end

-- Child `cseq` of queue `cq` ended (outcome c|f|x, payload its result or error): apply it to
-- parent `pseq` by the child's policy. 1 when applied, 0 when the parent does not await it
-- (applied before, or the parent is gone or not written yet).
local function flow_apply(pseq, cq, cseq, outcome, payload, now)
  local awaited = flow_pkey('d', pseq)
  local key = cq .. ':' .. cseq
  local entry = rcall('HGET', awaited, key)
  if not entry then
    -- A parent that stopped (dead) keeps the children it still awaited in its key x, counted
    -- as cancelled: one that ended by itself since (it was running: not stopped) is counted by
    -- how it ended instead, its result or error kept with the others' (a parent retried from the
    -- dead-letter set reads them); it wakes nobody. One cancelled ('x') stays. (Only while the
    -- parent lies dead: an obliterate detaching it deletes its keys, and must find every one.)
    local stopped = flow_pkey('x', pseq)
    local was = outcome ~= 'x' and rcall('HGET', stopped, key)
    if was then
      rcall('HDEL', stopped, key)
    end
    if was and rcall('ZSCORE', K_DEAD, pseq) then
      local shown = cq .. ':' .. string.sub(was, 2)
      if outcome == 'c' then
        rcall('HSET', flow_pkey('r', pseq), shown, payload)
      elseif string.sub(was, 1, 1) ~= 'r' then
        rcall('HSET', flow_pkey('f', pseq), shown, payload)
      end
    end
    return 0
  end
  rcall('HDEL', awaited, key)
  local policy, cid = string.sub(entry, 1, 1), string.sub(entry, 2)
  local shown = cq .. ':' .. cid
  if outcome == 'c' then
    rcall('HSET', flow_pkey('r', pseq), shown, payload)
  elseif policy ~= 'r' then
    rcall('HSET', flow_pkey('f', pseq), shown, payload)
    if policy == 'f' then
      flow_parent_failed(pseq, 'child ' .. cq .. '/' .. cid .. ' failed: ' .. payload, now)
      return 1
    end
  end
  if rcall('EXISTS', awaited) == 0 then
    flow_parent_ready(pseq, now)
  end
  return 1
end

-- A notice ('<outcome>\t<parent queue>\t<parent seq>\t<payload>') as outcome, parent seq,
-- payload; nil when it is not one.
local function flow_parse(notice)
  local outcome, pseq, payload = string.match(notice, '^([cfx])\t[^\t]+\t(%d+)\t(.*)$')
  return outcome, pseq, payload
end

-- Parent `pseq` was just written: apply the notices that came before it (its key e).
local function flow_apply_early(pseq, now)
  local early = flow_pkey('e', pseq)
  local flat = rcall('HGETALL', early)
  for i = 1, #flat, 2 do
    local cq, cseq = string.match(flat[i], '^(.*):(%d+)$')
    local outcome, _, payload = flow_parse(flat[i + 1])
    if cq and outcome then
      flow_apply(pseq, cq, cseq, outcome, payload, now)
    end
  end
  if #flat > 0 then
    rcall('DEL', early)
  end
end

-- The reply tail of a flow script: what it wrote for its caller to deliver at once (flow_out):
-- appended to `out` as the number of notices, then seq, notice per notice, then 1 when children
-- are to be cancelled.
local function flow_out_reply(out)
  out[#out + 1] = #flow_out.notices / 2
  for _, v in ipairs(flow_out.notices) do
    out[#out + 1] = v
  end
  out[#out + 1] = flow_out.cancels and 1 or 0
  return out
end

-- repair_job: parent `seq` is checked. When it waits for children while also in another place
-- (`elsewhere`), it waits no more; when it waits for none, it becomes pending. Returns true
-- when it waits (correctly) in no other place: the job's check ends there.
local function flow_repair_waiting(seq, meta, elsewhere, fixed)
  if not rcall('ZSCORE', K_WAITING_CHILDREN, seq) then
    return false
  end
  if elsewhere then
    rcall('ZREM', K_WAITING_CHILDREN, seq)
    fixed('waiting for children while queued elsewhere')
    return false
  end
  if rcall('EXISTS', flow_pkey('d', seq)) == 0 then
    rcall('ZREM', K_WAITING_CHILDREN, seq)
    requeue(seq, meta, false)
    wake()
    fixed('waiting for no children: made pending')
  end
  return true
end
