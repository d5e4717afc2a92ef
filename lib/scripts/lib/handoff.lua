-- The hand-off protocol: an add gives a job straight to a parked worker through the wake list.
-- The protocol is described once, in docs/internals/hand-off.md; these are its Lua steps.

-- A wake list entry: a hand-off (see add.lua) as { seq, token, p, entry }, else nil.
local function parse_hand(w)
  if not w then
    return nil
  end
  local seq, token, p = string.match(w, '^h(%d+):(%d+):%d+:(%d):')
  if not seq then
    return nil
  end
  return { seq = seq, token = token, p = tonumber(p), entry = w }
end

-- Drop job `seq`'s hand-off entry from the wake list (it is always first there), if it is there:
-- the job was cancelled or went back to its list, so no worker should start it.
local function drop_hand(seq)
  local h = parse_hand(rcall('LINDEX', K_WAKE, 0))
  if h and h.seq == seq then
    rcall('LPOP', K_WAKE)
  end
end

-- The hand-offs in the calling worker's hand-off list (K_WORKER_HANDOFFS) as parsed entries (plain
-- wake-ups left out).
local function worker_handoffs()
  local out = {}
  for _, e in ipairs(rcall('LRANGE', K_WORKER_HANDOFFS, 0, -1)) do
    local h = parse_hand(e)
    if h then
      out[#out + 1] = h
    end
  end
  return out
end

-- Replace the calling worker's hand-off list with `keep` (entries still to be adopted).
local function keep_handoffs(keep)
  rcall('DEL', K_WORKER_HANDOFFS)
  if #keep > 0 then
    rcall('RPUSH', K_WORKER_HANDOFFS, unpack(keep))
  end
end

-- Whether hand-off h still waits for its worker to adopt it (not cancelled or taken back).
local function hand_live(h)
  return rcall('HGET', K_LEASE_HOLDERS, h.seq) == h.token .. ':h'
end

-- Put a handed-off job back at the front of its list. `ran`: a worker took it (it may have
-- started it): like any run beside others, the job becomes a suspect. Else it never started:
-- its start leaves the rate logs it was counted in (the queue's, its group's), or its next
-- lease would count it twice in the window.
local function unhand(h, ran)
  rcall('ZREM', K_LEASED, h.seq)
  rcall('HDEL', K_LEASE_HOLDERS, h.seq)
  lease_unpad()
  local meta = decode_meta(rcall('HGET', K_META, h.seq))
  if ran then
    meta.s = 1
    save_meta(h.seq, meta)
    emit('reclaimed', meta.i or h.seq, 'why', 'worker died', ev_group(meta))
  else
    rcall('ZREM', K_RATE_LOG, h.token)
    if meta.g then
      rcall('ZREM', group_rate_key(meta.g), h.token)
    end
  end
  if meta.g then
    group_run_ended(meta.g, nil)
    group_requeue(h.seq, meta, true, nil)
  else
    rcall('LPUSH', pending_key(h.p), h.seq)
  end
  wake()
end

-- With no worker parked any more (the last one left, paused or died), a hand-off waiting in
-- the wake list has nobody to pop it: put the job back first in its pending list.
local function unhand_if_none_parked(now)
  if #rcall('ZRANGEBYSCORE', K_PARKED, now, '+inf', 'LIMIT', 0, 1) > 0 then
    return
  end
  local h = parse_hand(rcall('LINDEX', K_WAKE, 0))
  if not h then
    return
  end
  rcall('LPOP', K_WAKE)
  if hand_live(h) then
    unhand(h, false)
  end
end
