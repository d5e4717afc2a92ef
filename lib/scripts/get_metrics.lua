-- get_metrics: the per-minute counts of one kind (lib/scripts/lib/history.lua), as stored.
--! keys: metricsCompleted metricsFailed metricsDead
--! argv: kind:completed|failed|dead
-- Returns: { Redis now, the ring (a string of u32 pairs: minute number, count; '' when none) }.
local now = now_ms()
return { now, rcall('GET', metric_key(ARGV[1])) or '' }
