-- restore_caller_id: give a job back the caller id the index names it by, when its metadata has
-- none (found by repair(): the meta hash deleted or evicted), if the index still names it and the
-- job still exists: checked atomically. The rest of lost metadata (name, priority, attempts,
-- group) cannot be known again: the job goes on with the defaults.
--! keys: data meta callerIds
--! argv: caller_id seq
-- Returns: 1 restored, 0 left alone.
local cid, seq = ARGV[1], ARGV[2]
if rcall('HGET', K_CALLER_IDS, cid) ~= seq or not data_has(seq) then
  return 0
end
local meta = decode_meta(rcall('HGET', K_META, seq))
if meta.i then
  return 0
end
meta.i = cid
save_meta(seq, meta)
return 1
