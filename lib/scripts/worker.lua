-- worker: the worker registry. Heartbeat times come from Redis.
-- KEYS: the common layout; KEYS[27] is the worker's lease set.
-- ARGV: action ('register' | 'beat' | 'leave'), worker id (ignored for 'register').
-- Returns: the worker id for 'register', 1 otherwise.
local action = ARGV[1]
local now = now_ms()
if action == 'register' then
  local wid = int(rcall('INCR', K_WSEQ))
  rcall('ZADD', K_WORKERS, now, wid)
  return wid
elseif action == 'beat' then
  rcall('ZADD', K_WORKERS, now, ARGV[2])
  return 1
end
-- 'leave': the worker released or finished its jobs; forget it and its lease set.
rcall('ZREM', K_WORKERS, ARGV[2])
rcall('DEL', K_WLEASES)
return 1
