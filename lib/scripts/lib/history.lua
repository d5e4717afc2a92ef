-- History (docs/history.md): a job's log, whether it is a kept completed job, the fields of its
-- attempt events, and the per-minute counts (its times are in times.lua). Trimming kept completed
-- jobs is in completed.lua (it needs destroy()).

-- Job logs: K_JOB_LOGS:<seq> a list of lines (the newest max_lines kept), K_JOB_LOGS:<seq>:d how
-- many were dropped. Both go with the job (destroy, trim_completed).
local function logs_key(seq)
  return K_JOB_LOGS .. ':' .. seq
end

-- Append `lines` to job `seq`'s log, keeping the newest `max_lines`.
local function logs_append(seq, lines, max_lines)
  local key = logs_key(seq)
  local n = 0
  if #lines == 0 then
    return
  end
  for i = 1, #lines, CHUNK do
    n = rcall('RPUSH', key, unpack(lines, i, math.min(i + CHUNK - 1, #lines)))
  end
  if n > max_lines then
    rcall('LTRIM', key, -max_lines, -1)
    rcall('INCRBY', key .. ':d', n - max_lines)
  end
end

-- The log lines of a call, packed in one argument as records '<seq>:<bytes>:<line>' (and
-- '<seq>:d<n>:' for n lines the worker dropped over the cap before sending), appended to the
-- logs of the jobs `owned(seq)` allows: false for a job that may not log (its lease is lost), a
-- meta table for one whose meta the caller saves (meta l set on it), true for one whose meta is
-- marked here (meta l: the job has a log).
local function logs_apply(packed, max_lines, owned)
  if packed == '' or max_lines <= 0 then
    return
  end
  local per, drops, order = {}, {}, {}
  local i = 1
  while i <= #packed do
    local seq, dropped, len, at = string.match(packed, '^(%d+):(d?)(%d+):()', i)
    if not seq then
      break
    end
    local lines = per[seq]
    if not lines then
      lines = {}
      per[seq] = lines
      drops[seq] = 0
      order[#order + 1] = seq
    end
    if dropped == 'd' then
      drops[seq] = drops[seq] + tonumber(len)
      i = at
    else
      lines[#lines + 1] = string.sub(packed, at, at + tonumber(len) - 1)
      i = at + tonumber(len)
    end
  end
  for _, seq in ipairs(order) do
    local meta = owned(seq)
    if meta then
      logs_append(seq, per[seq], max_lines)
      if drops[seq] > 0 then
        rcall('INCRBY', logs_key(seq) .. ':d', drops[seq])
      end
      if meta == true then
        local raw = rcall('HGET', K_META, seq)
        if not (raw and string.find(raw, '"l":', 1, true)) then
          meta = decode_meta(raw)
          meta.l = 1
          save_meta(seq, meta)
        end
      else
        meta.l = 1
      end
    end
  end
end

-- Drop job `seq`'s log (it stops existing).
local function logs_forget(seq)
  rcall('DEL', logs_key(seq), logs_key(seq) .. ':d')
end

-- Drop the logs of jobs `seqs` (their meta JSON `raws`) that have one (meta l): one DEL.
local function logs_drop(seqs, raws)
  if next(raws) == nil then -- (no job has meta: the common case, no per-job look)
    return
  end
  local keys = {}
  for i = 1, #seqs do
    local raw = raws[i]
    if raw and string.find(raw, '"l":', 1, true) and decode_meta(raw).l then
      keys[#keys + 1] = logs_key(seqs[i])
      keys[#keys + 1] = logs_key(seqs[i]) .. ':d'
    end
  end
  for i = 1, #keys, CHUNK do
    rcall('DEL', unpack(keys, i, math.min(i + CHUNK - 1, #keys)))
  end
end

-- The fields of an event about one attempt of job `seq` (meta `meta`) by worker `wid`
-- ('failed'): the worker, the job's times (absolute: 'ta' added, 'ts' started) and its group
-- (ev_group's 'g').
local function attempt_fields(seq, wid, meta)
  if not EV_ON then
    return nil
  end
  local added, started = times_get({ seq })
  if meta.g then
    return 'w', wid, 'ta', added[1], 'ts', started[1], 'g', meta.g
  end
  return 'w', wid, 'ta', added[1], 'ts', started[1]
end

-- The fields of a 'dead' event (lib/events/): when it died ('T', `now`: the event's `at` is
-- the job's finishedAt, though the entry's id may be a ms later), the last error, when not the
-- reason, the job's times (absolute: 'ta' added, 'ts' started) and its group (ev_group's 'g').
local function dead_fields(seq, meta, now)
  if not EV_ON then
    return nil
  end
  local added, started = times_get({ seq })
  local f = { 'T', int(now), 'ta', added[1], 'ts', started[1] }
  if meta.e and meta.e ~= meta.r then
    f[#f + 1] = 'err'
    f[#f + 1] = ev_text(meta.e)
  end
  if meta.g then
    f[#f + 1] = 'g'
    f[#f + 1] = meta.g
  end
  return unpack(f)
end

-- Kept completed jobs (keepCompleted): K_COMPLETED_JOBS seq -> finished ms.
local function is_kept(seq)
  return rcall('ZSCORE', K_COMPLETED_JOBS, seq) ~= false
end

-- Per-minute counts (getMetrics): K_METRICS_<KIND> is a ring of METRIC_SLOTS u32 pairs (minute
-- number, count), slot minute mod METRIC_SLOTS: the last day. A call adds up its counts
-- (metric_add) and writes each kind once (metrics_flush): one BITFIELD, two in the call that
-- starts a minute's slot.
local METRIC_SLOTS = 1440

local metric_counts = {}

-- The ring of `kind` (completed | failed | dead).
local function metric_key(kind)
  if kind == 'completed' then
    return K_METRICS_COMPLETED
  elseif kind == 'failed' then
    return K_METRICS_FAILED
  end
  return K_METRICS_DEAD
end

local function metric_add(kind, n)
  if n > 0 then
    metric_counts[kind] = (metric_counts[kind] or 0) + n
  end
end

local function metrics_flush(now)
  local minute = math.floor(now / 60000)
  local slot = minute % METRIC_SLOTS
  for kind, n in pairs(metric_counts) do
    local key = metric_key(kind)
    -- (Numbers formatted with '%d': a number concatenated or passed to Redis is formatted with
    -- '%.14g' or '%.17g', ~2.5k instructions each.)
    local r = rcall('BITFIELD', key, 'SET', 'u32', string.format('#%d', 2 * slot), int(minute), 'INCRBY', 'u32', string.format('#%d', 2 * slot + 1), int(n))
    if r[1] ~= minute then
      -- A new minute in this slot: its count starts over. The string gets its full size at
      -- once (one allocation rather than doublings as the slots fill).
      rcall('BITFIELD', key, 'SET', 'u32', '#' .. (2 * slot + 1), n)
      local len = rcall('STRLEN', key)
      if len < METRIC_SLOTS * 8 then
        rcall('SET', key, rcall('GET', key) .. string.rep('\0', METRIC_SLOTS * 8 - len))
      end
    end
  end
  metric_counts = {}
end
