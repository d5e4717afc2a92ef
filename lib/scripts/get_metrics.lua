-- get_metrics: the per-minute counts of one kind (lib/scripts/lib/history.lua), as stored.
--! keys: metrics
--! argv: kind:completed|failed|dead
-- Returns: { Redis now, the ring (a string of u32 pairs: minute number, count; '' when none) }.
local now = now_ms()
return { now, rcall('GET', K_METRICS .. ':' .. ARGV[1]) or '' }
