-- progress: record a leased job's progress and publish it on the progress channel
-- ('<seq>:<value>').
--! keys: leaseHolders progress progressChannel meta eventLog
--! argv: seq token worker_id value
-- value: JSON.
-- Returns: 1, or E_LEASE_LOST.
local seq, token, wid, value = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if rcall('HGET', K_LEASE_HOLDERS, seq) ~= token .. ':' .. wid then
  return E_LEASE_LOST
end
rcall('HSET', K_PROGRESS, seq, value)
rcall('PUBLISH', K_PROGRESS_CHANNEL, seq .. ':' .. value)
if EV_ON then
  emit('progress', decode_meta(rcall('HGET', K_META, seq)).i or seq, 'v', value)
end
return 1
