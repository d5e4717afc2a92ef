-- update_data: replace the payload of a job: by its handler (`lease`, fenced by the lease token:
-- job.updateData), or by id (`id`: queue.updateData) while it waits (pending, delayed) or is
-- dead-lettered. The job keeps its place, options and times.
--! keys: data meta callerIds leaseHolders leased completedJobs
--! argv: action:lease seq token worker_id payload | action:id id payload
-- Returns: 1 updated; lease: E_LEASE_LOST when the caller does not hold the lease; id: 0 no such
--   job, 2 leased (its handler may update it), 3 completed (a kept job). Nothing changes unless 1.
local seq
if ARGV[1] == 'lease' then
  seq = ARGV[2]
  if rcall('HGET', K_LEASE_HOLDERS, seq) ~= ARGV[3] .. ':' .. ARGV[4] then
    return E_LEASE_LOST
  end
  rcall('HSET', data_key(seq), seq, ARGV[5])
  return 1
end
seq = resolve(ARGV[2])
if not seq then
  return kept_job(ARGV[2]) and 3 or 0
end
if rcall('ZSCORE', K_LEASED, seq) then
  return 2
end
rcall('HSET', data_key(seq), seq, ARGV[3])
return 1
