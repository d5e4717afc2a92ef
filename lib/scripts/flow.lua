-- flow: the queue's flow control settings (docs/flow-control.md), read by every lease path.
--! keys: flow ev
-- ARGV: action, then:
--   'pause'               -> the pause version; publishes 'p:<version>' on the event channel
--   'resume'              -> the new version (0: was not paused); publishes 'r:<version>'
--   'rate' max, dur ms    -> 1 (max 0 removes the rate limit)
--   'conc' n              -> 1 (0 removes the concurrency limit)
--   'get'                 -> { paused version (0 = not), rate max, rate dur ms, concurrency,
--                              no leases until ms } (0 for what is not set)
-- Workers learn a pause within one round trip (the channel); the lease scripts enforce it.
local action = ARGV[1]
if action == 'pause' then
  local v = rcall('HGET', K_FLOW, 'p')
  if not v then
    v = rcall('HINCRBY', K_FLOW, 'v', 1)
    rcall('HSET', K_FLOW, 'p', v)
  end
  rcall('PUBLISH', K_EV, 'p:' .. v)
  return tonumber(v)
elseif action == 'resume' then
  if rcall('HEXISTS', K_FLOW, 'p') == 0 then
    return 0
  end
  local v = rcall('HINCRBY', K_FLOW, 'v', 1)
  rcall('HDEL', K_FLOW, 'p')
  rcall('PUBLISH', K_EV, 'r:' .. v)
  return v
elseif action == 'rate' then
  if tonumber(ARGV[2]) > 0 then
    rcall('HSET', K_FLOW, 'm', ARGV[2], 'd', ARGV[3])
  else
    rcall('HDEL', K_FLOW, 'm', 'd')
  end
  return 1
elseif action == 'conc' then
  if tonumber(ARGV[2]) > 0 then
    rcall('HSET', K_FLOW, 'c', ARGV[2])
  else
    rcall('HDEL', K_FLOW, 'c')
  end
  return 1
end
local f = rcall('HMGET', K_FLOW, 'p', 'm', 'd', 'c', 'u')
local out = {}
for i = 1, 5 do
  out[i] = tonumber(f[i]) or 0
end
return out
