-- extend_leases: push the deadlines of leased jobs to now + lease_ms.
--! keys: leased leaseHolders workerLeases meta jobLogs workers cancelledLeases
--! argv: worker_id lease_ms max_log_lines logs keep_later:0|1 count leases(seq token)*count
-- logs: log lines of the jobs (logs_apply, lib/scripts/lib/history.lua), '' = none; those of a
-- job whose lease is lost are dropped. keep_later: 1 (a worker's renewal) never moves a deadline
-- earlier: a handler's longer job.extend() stays; 0 (extend()) sets now + lease_ms.
-- A worker that extended a lease of its own is alive: it counts as its heartbeat too (a worker
-- resumed after a freeze renews first, and clean() must not take it for dead between that renewal
-- and its heartbeat thread's first beat). Never lowers a score (a bridge beat's grace), never
-- registers a worker clean() already took for dead.
-- Returns: { deadline, then per job 1 extended | 0 lease lost | the acknowledgement id its
-- cancel waits for (lost: cancelled, see cancel.lua) }.
local wid = ARGV[1]
local ms = tonumber(ARGV[2])
local keep_later = ARGV[5] == '1'
local count = tonumber(ARGV[6])
local now = now_ms()
local deadline = now + ms
local out = { deadline }
if count == 0 then
  return out
end
local seqs = {}
for j = 1, count do
  seqs[j] = ARGV[5 + j * 2]
end
local tokens = hmget(K_LEASE_HOLDERS, seqs)
local z = {}
local lost = {}
local held = {}
for j = 1, count do
  if tokens[j] == ARGV[6 + j * 2] .. ':' .. wid then
    z[#z + 1] = deadline
    z[#z + 1] = seqs[j]
    out[j + 1] = 1
    held[seqs[j]] = true
  else
    -- Lost. Forget it from our lease set, unless we hold the job under a newer lease (a stale
    -- or forged token must not hide a job we hold from reclaim_worker).
    if not held_by(tokens[j], wid) then
      lost[#lost + 1] = seqs[j]
    end
    out[j + 1] = rcall('GET', K_CANCELLED_LEASES .. ':' .. ARGV[6 + j * 2]) or 0
  end
end
if #z > 0 then
  if wid ~= '0' then
    rcall('ZADD', K_WORKERS, 'XX', 'GT', now, wid)
  end
  for i = 1, #z, CHUNK do
    if keep_later then
      rcall('ZADD', K_LEASED, 'XX', 'GT', unpack(z, i, math.min(i + CHUNK - 1, #z)))
    else
      rcall('ZADD', K_LEASED, 'XX', unpack(z, i, math.min(i + CHUNK - 1, #z)))
    end
  end
end
if #lost > 0 and wid ~= '0' then
  rcall_each('SREM', K_WORKER_LEASES, lost)
end
logs_apply(ARGV[4], tonumber(ARGV[3]), function(seq)
  return held[seq] == true
end)
return out
