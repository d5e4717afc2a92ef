-- worker: the worker registry. Heartbeat times come from Redis.
-- KEYS: the common layout; KEYS[28] is the worker's lease set.
-- ARGV: action ('register' | 'beat' | 'unpark' | 'leave'), worker id (ignored for 'register').
-- 'unpark' (pause) and 'leave' take the worker out of the parked set; a hand-off left in the
-- wake list with no parked worker to pop it goes back to its pending list.
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
rcall('ZREM', K_PARKED, ARGV[2])
unhand_if_none_parked(now)
if action == 'unpark' then
  return 1
end
-- 'leave': the worker released or finished its jobs; forget it and its lease set.
rcall('ZREM', K_WORKERS, ARGV[2])
rcall('DEL', K_WLEASES)
return 1
