-- rate_limited: a handler said the remote side wants us to wait (RateLimitError): give its job
-- back to the FRONT without counting an attempt, and let the queue lease nothing for `ms`.
--! keys: pending meta leased tokens wleases flow
-- ARGV: id, token, worker id, ms.
-- Returns: the time (Redis ms) until which the queue leases nothing, or -1 when the lease was
--   lost (then nothing changed).
local n, token, wid, ms = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if rcall('HGET', K_TOKENS, n) ~= token .. ':' .. wid then
  return E_LEASE_LOST
end
rcall('ZREM', K_LEASED, n)
rcall('HDEL', K_TOKENS, n)
rcall('SREM', K_WLEASES, n)
requeue(n, decode_meta(rcall('HGET', K_META, n)), true)
local until_ms = now_ms() + ms
local u = tonumber(rcall('HGET', K_FLOW, 'u'))
if not u or u < until_ms then
  rcall('HSET', K_FLOW, 'u', until_ms)
  u = until_ms
end
return u
