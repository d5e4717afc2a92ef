-- Flows: a parent runs once its children ended, across queues (and Cluster slots). The protocol
-- is described once, in docs/internals/flows.md; these are the steps every script that ends a
-- job takes (flow_parents.lua: what a notice does to its parent).
-- Meta P on a child: '<parent queue>\t<parent seq>\t<parent caller id, or empty>'. Meta W on a
-- parent, for its whole life: its delay in ms once its children ended (0: none); it waits while
-- it is in K_WAITING_CHILDREN. A parent's own keys (K_FLOW_PARENT then a letter, ':<seq>'): d the
-- children it still awaits ('<queue>:<seq>' -> policy f|i|r then the child's public id), r
-- their results, f the errors of failed ones ('<queue>:<public id>' -> value), x what it still
-- awaited when it failed (cancelled), e notices that came before it was written.
-- A child that ends writes a notice in its own queue, in the same script (K_FLOW_OUTBOX:
-- '<outcome c|f|x>\t<parent queue>\t<parent seq>\t<payload>', K_FLOW_OUTBOX_AT: when), which
-- the worker, cancel, drain and clean() deliver to the parent's queue (flow_notice.lua).

-- What this call wrote that its caller should deliver at once: notices (seq, notice, ...) and
-- whether children are to be cancelled (K_FLOW_CANCELS). The flow scripts reply it.
local flow_out = { notices = {}, cancels = false }

-- Whether caller id `cid` is taken: its job exists, or completed within its dedupe window.
local function flow_id_taken(cid, now)
  local v = rcall('HGET', K_CALLER_IDS, cid)
  local until_ms = taken_until(v)
  return v and (until_ms == nil or until_ms > now)
end

-- The member of K_FLOW_RESERVED ('<first>:<last>:<ms>') of reservation `range` ('<first>:<last>'),
-- or nil when it is gone (written, or dropped as an orphan).
local function flow_reservation(range)
  local first = string.match(range, '^(%d+):')
  for _, m in ipairs(rcall('ZRANGEBYSCORE', K_FLOW_RESERVED, first or 0, first or 0)) do
    if string.sub(m, 1, #range + 1) == range .. ':' then
      return m
    end
  end
  return nil
end

-- Key `kind` (d r f x e) of parent `seq`.
local function flow_pkey(kind, seq)
  return K_FLOW_PARENT .. kind .. ':' .. seq
end

-- Drop reservation `m` of K_FLOW_RESERVED ('<first>:<last>:<ms>') with the early notices ('e'
-- keys) kept for its jobs.
local function flow_unreserve(m)
  rcall('ZREM', K_FLOW_RESERVED, m)
  local first, last = string.match(m, '^(%d+):(%d+):')
  for seq = tonumber(first or 1), tonumber(last or 0) do
    rcall('DEL', flow_pkey('e', int(seq)))
  end
end

-- A root caller id's claim (K_FLOW_CLAIMS, flow_reserve.lua) as its add's token, the range of
-- the reservation it names, and its Redis time (ms); nil when `v` is none.
local function flow_claim(v)
  local by, range, ms = string.match(v or '', '^([^\t]*)\t([^\t]*)\t(%d+)$')
  return by, range, tonumber(ms)
end

-- Job `seq` (meta `meta`) ended: if it is a child, note for its parent that it completed ('c',
-- payload its result), is dead ('f', its reason) or was cancelled ('x').
local function flow_notify(seq, meta, outcome, payload, now)
  local pq, pseq = string.match(meta.P or '', '^([^\t]+)\t(%d+)')
  if not pq then
    return
  end
  local notice = outcome .. '\t' .. pq .. '\t' .. pseq .. '\t' .. payload
  rcall('HSET', K_FLOW_OUTBOX, seq, notice)
  rcall('ZADD', K_FLOW_OUTBOX_AT, now or now_ms(), seq)
  flow_out.notices[#flow_out.notices + 1] = seq
  flow_out.notices[#flow_out.notices + 1] = notice
end

-- Parent `seq` ends otherwise than completed (dead, cancelled): it waits no more, and the children
-- it still awaits are to be cancelled (by whoever delivers K_FLOW_CANCELS; kept in its key x).
local function flow_stop_children(seq, now)
  rcall('ZREM', K_WAITING_CHILDREN, seq)
  local awaited = flow_pkey('d', seq)
  local keys = rcall('HKEYS', awaited)
  if #keys == 0 then
    return
  end
  local z = {}
  now = now or now_ms()
  for _, k in ipairs(keys) do
    z[#z + 1] = now
    z[#z + 1] = k
  end
  rcall_each('ZADD', K_FLOW_CANCELS, z)
  rcall('RENAME', awaited, flow_pkey('x', seq))
  flow_out.cancels = true
end

-- Job `seq` is dead ('f') or cancelled ('x'): tell its parent; a parent stops its children.
local function flow_job_ended(seq, meta, outcome, reason, now)
  if meta.P then
    flow_notify(seq, meta, outcome, reason, now)
  end
  if meta.W then
    flow_stop_children(seq, now)
  end
end

-- 10 when this call wrote flow work to deliver (flow_out), else 0 (a reply flag of cancel.lua).
local function flow_wrote()
  return (#flow_out.notices > 0 or flow_out.cancels) and 10 or 0
end

-- Whether job `seq` is part of a flow (a child or a parent): an add that replaces leaves it alone.
local function flow_held(seq)
  return string.find(rcall('HGET', K_META, seq) or '', '"[PW]":') ~= nil
end

-- 1 when this queue has flow work left for flow_due.lua (notices, cancels, reservations), else 0.
local function flow_work_left()
  for _, k in ipairs({ K_FLOW_OUTBOX_AT, K_FLOW_RECHECKS, K_FLOW_CANCELS, K_FLOW_RESERVED }) do
    if rcall('EXISTS', k) == 1 then
      return 1
    end
  end
  return 0
end

-- Job `seq` stops existing: a parent's own keys go.
local function flow_forget(seq, meta)
  if meta.W then
    rcall('ZREM', K_WAITING_CHILDREN, seq)
    rcall('DEL', flow_pkey('d', seq), flow_pkey('r', seq), flow_pkey('f', seq), flow_pkey('x', seq))
  end
end

-- Job `seq` completed (`raw`: its meta JSON, holding "P" or "W"): a child tells its parent
-- its result (JSON; nil: none sent, null); a parent's keys go (its children's results are kept
-- until it ends).
local function flow_completed(seq, raw, result, now)
  local meta = decode_meta(raw)
  flow_notify(seq, meta, 'c', result or 'null', now)
  flow_forget(seq, meta)
end
