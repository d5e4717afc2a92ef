-- lease: promote due delayed jobs, then lease up to `count` jobs, highest priority first.
--! keys: pending tok data dataBuckets meta ids delayed leased tokens wake parked wleases schedRun flow rate events
-- ARGV: count, lease ms, worker id ('0' = none).
-- Returns: { now, deadline, next due (when to look again: the next delayed job, or the next
--   time flow control allows a lease; -1 = none (wait for a wake-up or a resume); 0 = not
--   looked up because the batch is full), drain (1: the worker should finish what it holds
--   before leasing again, see lease_jobs), paused (the queue's pause version, 0 = not paused),
--   then per job: id, token, payload, meta }.
local now = now_ms()
ev_gather() -- this call's events (promoted, active): one entry
local lease_ms = tonumber(ARGV[2])
local out = { now, now + lease_ms, 0, 0, 0 }
local count = tonumber(ARGV[1])
local live, drain, limited_until, paused = lease_jobs(count, lease_ms, ARGV[3], now, out, 0)
if drain then
  out[4] = 1
end
out[5] = paused
if limited_until ~= 0 then
  out[3] = limited_until
elseif live < count then
  out[3] = next_due()
end
ev_flush()
return out
