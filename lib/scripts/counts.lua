-- counts: sizes of every state, cheap enough for health checks (O(1) per key).
--! keys: pending delayed leased dead workers completedJobs
--! argv: heartbeat_timeout_ms
-- Returns: { p0..p9 lengths, delayed, leased, dead, live workers, Redis time ms, kept completed }.
local now = now_ms()
local out = {}
for p = 0, 9 do
  out[#out + 1] = rcall('LLEN', pending_key(p))
end
out[#out + 1] = rcall('ZCARD', K_DELAYED)
out[#out + 1] = rcall('ZCARD', K_LEASED)
out[#out + 1] = rcall('ZCARD', K_DEAD)
out[#out + 1] = rcall('ZCOUNT', K_WORKERS, now - tonumber(ARGV[1]), '+inf')
out[#out + 1] = now
out[#out + 1] = rcall('ZCARD', K_COMPLETED_JOBS)
return out
