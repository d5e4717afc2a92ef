-- get_logs: a page of a job's log (live or kept completed), oldest line first.
--! keys: data meta callerIds completedJobs jobLogs
--! argv: id offset limit
-- Returns: { lines kept, lines dropped (over the cap), then the page's lines }, or { -1 } when
--   no such job.
local id, offset, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local seq = resolve(id) or kept_job(id)
if not seq then
  return { -1 }
end
local key = logs_key(seq)
local out = { rcall('LLEN', key), tonumber(rcall('GET', key .. ':d')) or 0 }
for _, line in ipairs(rcall('LRANGE', key, offset, offset + limit - 1)) do
  out[#out + 1] = line
end
return out
