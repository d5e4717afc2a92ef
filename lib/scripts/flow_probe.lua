-- flow_probe: for repair() (docs/internals/flows.md): which of these children of a waiting parent
-- still exist, or have their notice waiting in this queue's outbox. A kept completed child
-- (keepCompleted) has ended: when its notice is not in the outbox it is written there again (its
-- kept result, or null), and repair() delivers it.
--! keys: data meta flowOutbox flowOutboxAt completedJobs completedInfo
--! argv: count seqs*count
-- Returns: per seq 1 it exists or its notice waits, 2 its notice was written again (a kept
-- child), 0 neither (its notice was lost).
local out = {}
local now = nil
for j = 1, tonumber(ARGV[1]) do
  local seq = ARGV[1 + j]
  local waits = rcall('HEXISTS', K_FLOW_OUTBOX, seq) == 1
  if not waits and is_kept(seq) then
    now = now or now_ms()
    local info = rcall('HGET', K_COMPLETED_INFO, seq) or ''
    local result = string.match(info, '^[^:]*:[^:]*:(.*)$') or 'null'
    flow_notify(seq, decode_meta(rcall('HGET', K_META, seq)), 'c', result, now)
    out[j] = 2
  else
    out[j] = (waits or data_has(seq)) and 1 or 0
  end
end
return out
