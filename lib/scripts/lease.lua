-- lease: promote due delayed jobs, then lease up to `count` jobs, highest priority first.
--! keys: pending tok data meta delayed leased tokens wake parked wleases events
-- ARGV: count, lease ms, worker id ('0' = none).
-- Returns: { now, deadline, next delayed due (-1 = none; 0 = not looked up because the batch is
--   full), drain (1: the worker should finish what it holds before leasing again, see
--   lease_jobs), then per job: id, token, payload, meta }.
local now = now_ms()
local lease_ms = tonumber(ARGV[2])
local out = { now, now + lease_ms, 0, 0 }
local count = tonumber(ARGV[1])
local live, drain = lease_jobs(count, lease_ms, ARGV[3], now, out, 0)
if drain then
  out[4] = 1
end
if live < count then
  out[3] = next_due()
end
return out
