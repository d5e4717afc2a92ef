-- flow_control: the queue's flow control settings (docs/flow-control.md), read by every lease
-- path (lib/scripts/lib/flow_control.lua).
--! keys: flowControl noticeChannel wake
--! argv: action:pause | action:resume | action:rate max duration_ms | action:conc concurrency
--! argv: | action:get
-- pause  -> the pause version; publishes 'p:<version>' on the notice channel
-- resume -> the new version (0: was not paused); publishes 'r:<version>'
-- rate   -> 1 (max 0 removes the rate limit)
-- conc   -> 1 (concurrency 0 removes the concurrency limit)
-- (rate and conc wake a parked worker, as a group's own limits do: jobs the old limit held
-- start now, not at a worker's next idle timeout.)
-- get    -> { paused version (0 = not), rate max, rate duration ms, concurrency, no leases
--           until ms } (0 for what is not set)
-- Workers learn a pause within one round trip (the channel); the lease scripts enforce it.
local action = ARGV[1]
if action == 'pause' then
  local v = rcall('HGET', K_FLOW_CONTROL, 'p')
  if not v then
    v = rcall('HINCRBY', K_FLOW_CONTROL, 'v', 1)
    rcall('HSET', K_FLOW_CONTROL, 'p', v)
  end
  rcall('PUBLISH', K_NOTICE_CHANNEL, 'p:' .. v)
  return tonumber(v)
elseif action == 'resume' then
  if rcall('HEXISTS', K_FLOW_CONTROL, 'p') == 0 then
    return 0
  end
  local v = rcall('HINCRBY', K_FLOW_CONTROL, 'v', 1)
  rcall('HDEL', K_FLOW_CONTROL, 'p')
  rcall('PUBLISH', K_NOTICE_CHANNEL, 'r:' .. v)
  return v
elseif action == 'rate' then
  if tonumber(ARGV[2]) > 0 then
    rcall('HSET', K_FLOW_CONTROL, 'm', ARGV[2], 'd', ARGV[3])
  else
    rcall('HDEL', K_FLOW_CONTROL, 'm', 'd')
  end
  wake()
  return 1
elseif action == 'conc' then
  if tonumber(ARGV[2]) > 0 then
    rcall('HSET', K_FLOW_CONTROL, 'c', ARGV[2])
  else
    rcall('HDEL', K_FLOW_CONTROL, 'c')
  end
  wake()
  return 1
end
local f = rcall('HMGET', K_FLOW_CONTROL, 'p', 'm', 'd', 'c', 'u')
local out = {}
for i = 1, 5 do
  out[i] = tonumber(f[i]) or 0
end
return out
