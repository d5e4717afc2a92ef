-- flow_children: what the children of parent `id` (public id) left it: their results, or the errors
-- of those that failed (docs/flows.md), kept until the parent ends.
--! keys: data meta callerIds flowParent completedJobs
--! argv: id kind:r|f
-- Returns: flat child key ('<queue>:<public id>'), value, ...; E_NOT_FOUND when no job has `id`.
-- A kept completed parent (keepCompleted) is found; its children's results went when it ended.
local seq = resolve(ARGV[1]) or kept_job(ARGV[1])
if not seq then
  return E_NOT_FOUND
end
return rcall('HGETALL', flow_pkey(ARGV[2], seq))
