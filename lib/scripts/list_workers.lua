-- list_workers: the registered workers (getWorkers), as the heartbeats keep them.
--! keys: workers workerInfo
--! argv: limit
-- Returns: { Redis now, then per worker (at most limit): id, last beat ms, info ('' when none:
--   '<registered ms>:<JSON>', see worker_registry.lua) }.
local out = { now_ms() }
for _, e in ipairs(rcall('ZRANGE', K_WORKERS, 0, tonumber(ARGV[1]) - 1, 'WITHSCORES')) do
  out[#out + 1] = e
end
local ids = {}
for i = 2, #out, 2 do
  ids[#ids + 1] = out[i]
end
local infos = #ids > 0 and hmget(K_WORKER_INFO, ids) or {}
local flat = { out[1] }
for k, id in ipairs(ids) do
  flat[#flat + 1] = id
  flat[#flat + 1] = out[2 * k + 1]
  flat[#flat + 1] = infos[k] or ''
end
return flat
