-- release: give leased jobs back to the FRONT of their pending lists, no attempt counted.
--! keys: pending meta leased leaseHolders wake workerLeases eventLog
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: worker_id count leases(seq token)*count
-- Returns: per job 1 released | 0 lease lost.
local wid = ARGV[1]
local count = tonumber(ARGV[2])
local out = {}
local released = {} -- for the event log
-- Walk backwards so the first job given ends up first in line.
for j = count, 1, -1 do
  local seq, token = ARGV[1 + j * 2], ARGV[2 + j * 2]
  local current = rcall('HGET', K_LEASE_HOLDERS, seq)
  if current == token .. ':' .. wid then
    rcall('ZREM', K_LEASED, seq)
    rcall('HDEL', K_LEASE_HOLDERS, seq)
    lease_unpad()
    local meta = decode_meta(rcall('HGET', K_META, seq))
    if meta.g then
      group_run_ended(meta.g, nil)
    end
    requeue(seq, meta, true)
    out[j] = 1
    released[#released + 1] = seq
    current = nil
  else
    out[j] = 0
  end
  -- Forget it from our lease set, unless we hold the job under another (newer) lease.
  if wid ~= '0' and not held_by(current, wid) then
    rcall('SREM', K_WORKER_LEASES, seq)
  end
end
emit_jobs('released', released)
if count > 0 then
  wake()
end
return out
