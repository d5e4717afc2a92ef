-- The event log (K_EVENTS, a capped stream read by lib/events/): scripts that change a job's
-- state log the change in the same call. EV_CAP is the stream's approximate cap, taken by the
-- prelude from the first ARGV of every script that declares the key; 0 = events off.
-- An entry: 'e' <kind>, fields of the whole entry, then per job 'i' <public id> and its fields.

-- Log one event of job `id` (its public id), with its fields (name, value, ...).
local function emit(kind, id, ...)
  if EV_CAP > 0 then
    rcall('XADD', K_EVENTS, 'MAXLEN', '~', EV_CAP, '*', 'e', kind, 'i', id, ...)
  end
end

-- Log `kind` for jobs `ns` (entries of up to 500 jobs), each entry led by the fields in `head`.
-- `raws`: their meta JSON (public ids are caller ids where set); nil: read from K_META; false:
-- `ns` are public ids already.
local function emit_jobs(kind, ns, raws, head)
  if EV_CAP == 0 or #ns == 0 then
    return
  end
  if raws == nil then
    raws = hmget(K_META, ns)
  end
  for i = 1, #ns, 500 do
    local f = { 'e', kind }
    for _, v in ipairs(head or {}) do
      f[#f + 1] = v
    end
    for j = i, math.min(i + 499, #ns) do
      local id, raw = ns[j], raws and raws[j]
      if raw and string.find(raw, '"i":', 1, true) then
        id = decode_meta(raw).i or id
      end
      f[#f + 1] = 'i'
      f[#f + 1] = id
    end
    rcall('XADD', K_EVENTS, 'MAXLEN', '~', EV_CAP, '*', unpack(f))
  end
end
