-- Flow control: queue-wide pause, rate limit and global concurrency, kept in K_FLOW_CONTROL (set
-- by flow_control.lua) and read by every lease path (lease_jobs, add's hand-off).
-- docs/flow-control.md states the semantics.

-- How many of `count` jobs the queue lets one lease take at `now`. Returns allowed, when to look
-- again if that is fewer than `count` (ms; -1: when a slot frees or the queue resumes; 0: not
-- limited), the pause version while paused (0: not paused), and the rate window length (ms)
-- when a rate limit is set (false: none; starts must then be recorded with log_lease_starts).
-- With no limit set this is one HMGET.
local function leases_allowed(now, count)
  local f = rcall('HMGET', K_FLOW_CONTROL, 'p', 'u', 'm', 'd', 'c')
  if not (f[1] or f[2] or f[3] or f[5]) then
    return count, 0, 0, false
  end
  if f[1] then
    return 0, -1, tonumber(f[1]), false
  end
  local u = tonumber(f[2])
  if u and u > now then
    return 0, u, 0, false
  end
  local allowed, at, dur = count, 0, false
  if f[5] then
    local room = tonumber(f[5]) - leased_count()
    if room < allowed then
      allowed, at = math.max(0, room), -1
    end
  end
  if f[3] then
    dur = tonumber(f[4])
    rcall('ZREMRANGEBYSCORE', K_RATE_LOG, '-inf', now - dur)
    local room = tonumber(f[3]) - rcall('ZCARD', K_RATE_LOG)
    if room < allowed then
      allowed = math.max(0, room)
      -- The next start is allowed when the oldest start in the window leaves it (with none
      -- yet, the oldest is one of those this lease makes now).
      local oldest = rcall('ZRANGE', K_RATE_LOG, 0, 0, 'WITHSCORES')[2]
      at = (tonumber(oldest) or now) + dur
    end
  end
  return allowed, at, 0, dur
end

-- Record lease starts (tokens) at `now` in the rate log of a window of `dur` ms.
local function log_lease_starts(now, tokens, dur)
  local z = {}
  for _, t in ipairs(tokens) do
    z[#z + 1] = now
    z[#z + 1] = t
  end
  rcall_each('ZADD', K_RATE_LOG, z)
  rcall('PEXPIRE', K_RATE_LOG, dur)
end
