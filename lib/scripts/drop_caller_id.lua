-- drop_caller_id: drop a caller id that points at a job that does not exist (found by repair()),
-- if it still does: checked atomically, so an id taken again meanwhile is left alone.
--! keys: data callerIds
--! argv: caller_id seq
-- seq: the job it pointed at.
-- Returns: 1 dropped, 0 left alone.
if rcall('HGET', K_CALLER_IDS, ARGV[1]) == ARGV[2] and not data_has(ARGV[2]) then
  return rcall('HDEL', K_CALLER_IDS, ARGV[1])
end
return 0
