-- promote: a delayed job runs now (to the back of its pending list).
--! keys: pending meta callerIds data delayed wake
--! argv: id
-- id: the job's public id.
-- Returns: 1 promoted, 0 not delayed (or no such job).
local n = resolve(ARGV[1])
if not n or not rcall('ZSCORE', K_DELAYED, n) then
  return 0
end
rcall('ZREM', K_DELAYED, n)
requeue(n, decode_meta(rcall('HGET', K_META, n)), false)
wake()
return 1
