-- The event log (K_EVENT_LOG, a capped stream read by lib/events/): scripts that change a job's
-- state log the change in the same call. EV_CAP_ARG is the stream's approximate cap, taken by
-- the prelude from the first ARGV of every script that declares the key ('0' = events off; EV_ON:
-- whether they are on).
-- An entry holds one or more sections, in order; a section is 'e' <kind>, then fields of the
-- whole section, then its jobs: 'i' <public id> followed by that job's own fields, or 'n' <ids>
-- (several public ids without spaces, separated by single spaces: no fields of their own), and
-- maybe trailers: 'tm' with a value per job of the section, in order (their times), 'gs' a JSON
-- array of its jobs' groups ('' = none; emit_jobs).
-- A call that gathers (ev_gather ... ev_flush: the lease paths, complete_and_lease and lease) writes all its
-- sections as one entry; otherwise each emit writes its own entry.

-- Fields of the entry this call is gathering (nil: not gathering).
local ev_fields = nil

-- Most fields in one entry (unpack's limit is ~8000 values): a gathering call past it writes
-- what it has and goes on in a new entry.
local EV_MAX_FIELDS = 1000

local function ev_write(f)
  rcall('XADD', K_EVENT_LOG, 'MAXLEN', '~', EV_CAP_ARG, '*', unpack(f))
end

-- Add fields `f` (one or more whole sections) to this call's entry, or write them at once.
local function ev_add(f)
  if not ev_fields then
    ev_write(f)
    return
  end
  if #ev_fields + #f > EV_MAX_FIELDS and #ev_fields > 0 then
    ev_write(ev_fields)
    ev_fields = {}
  end
  local n = #ev_fields
  for k = 1, #f do
    ev_fields[n + k] = f[k]
  end
end

-- From here until ev_flush, this call's events go into one entry.
local function ev_gather()
  if EV_ON then
    ev_fields = {}
  end
end

-- Write the gathered entry (if any event was logged).
local function ev_flush()
  if ev_fields and #ev_fields > 0 then
    ev_write(ev_fields)
  end
  ev_fields = nil
end

-- The event field of a job's group ('g', group), or nothing: the last argument of an emit.
local function ev_group(meta)
  if meta.g then
    return 'g', meta.g
  end
end

-- An event's text (an error, a dead-lettering reason): its first 500 bytes, without a UTF-8
-- character that does not fit whole (never half of one: the event stays valid UTF-8).
local function ev_text(s)
  if #s <= 500 then
    return s
  end
  -- Byte 501 continues a character (10xxxxxx): cut before that character's first byte.
  local i = 501
  while i > 498 and string.byte(s, i) >= 128 and string.byte(s, i) < 192 do
    i = i - 1
  end
  return string.sub(s, 1, i - 1)
end

-- Log one event of job `id` (its public id), with its fields (name, value, ...).
local function emit(kind, id, ...)
  if EV_ON then
    ev_add({ 'e', kind, 'i', id, ... })
  end
end

-- Log `kind` for jobs `seqs` (sections of up to 500 jobs), each section led by the fields in
-- `head`. `raws`: their meta JSON (public ids are caller ids where set); nil: read from K_META;
-- false: `seqs` are public ids already (no groups). Runs of ids without a space go in one 'n'
-- field. `tails` (optional): a string per job without spaces; a section ends with 'tm' and those
-- of its jobs, in order ('n' and 'i' jobs alike), separated by spaces (times.lua: the jobs'
-- times). A section with a grouped job ends with 'gs': a JSON array of its jobs' groups, in order
-- ('' = none) — one field, not 'i' <id> 'g' <group> per job (4 fields, out of the 'n' run: ~20k
-- instructions a grouped job over its 'active' and 'completed' events, measured in callgrind).
-- `known` (optional): per job its group as the caller already has it (nil: read from its meta;
-- false: none), sparing a second read of the meta (~3k instructions a job).
local function emit_jobs(kind, seqs, raws, head, tails, known)
  if not EV_ON or #seqs == 0 then
    return
  end
  if raws == nil then
    raws = hmget(K_META, seqs)
  end
  for i = 1, #seqs, 500 do
    local f = { 'e', kind }
    for _, v in ipairs(head or {}) do
      f[#f + 1] = v
    end
    local run, r = {}, 0
    local groups = nil -- per job of the section its group ('' = none), once one has a group
    for j = i, math.min(i + 499, #seqs) do
      local id, raw, g = seqs[j], raws and raws[j], nil
      if raw then
        if string.find(raw, '"i":', 1, true) then
          local meta = decode_meta(raw)
          id, g = meta.i or id, meta.g
        elseif known and known[j] ~= nil then
          g = known[j] or nil
        else
          g = meta_group(raw)
        end
      end
      if g and not groups then
        groups = {}
        for k = i, j - 1 do
          groups[k - i + 1] = ''
        end
      end
      if groups then
        groups[j - i + 1] = g or ''
      end
      -- (A seq this call read as a number has no space: no search.)
      if not seq_numbers[id] and string.find(id, ' ', 1, true) then
        if r > 0 then
          f[#f + 1] = 'n'
          f[#f + 1] = table.concat(run, ' ')
          run, r = {}, 0
        end
        f[#f + 1] = 'i'
        f[#f + 1] = id
      else
        r = r + 1
        run[r] = id
      end
    end
    if r > 0 then
      f[#f + 1] = 'n'
      f[#f + 1] = table.concat(run, ' ')
    end
    if tails then
      f[#f + 1] = 'tm'
      f[#f + 1] = table.concat(tails, ' ', i, math.min(i + 499, #seqs))
    end
    if groups then
      f[#f + 1] = 'gs'
      f[#f + 1] = cjson.encode(groups)
    end
    ev_add(f)
  end
end

-- emit_jobs(kind, seqs, false) for seqs that are their own public ids and have no group (plain
-- jobs: counter seqs), without its per-job look at each id, and each section written at once,
-- without ev_add (add_plain.lua: one closure fewer in a script that runs for every plain add).
-- `seqs`: a list, or one seq (a string: no table). Returns the first entry's id (nil: events
-- off).
local function emit_seqs(kind, seqs)
  if not EV_ON then
    return nil
  end
  if type(seqs) == 'string' then
    return rcall('XADD', K_EVENT_LOG, 'MAXLEN', '~', EV_CAP_ARG, '*', 'e', kind, 'n', seqs)
  end
  local first
  for i = 1, #seqs, 500 do
    local id = rcall('XADD', K_EVENT_LOG, 'MAXLEN', '~', EV_CAP_ARG, '*', 'e', kind, 'n', table.concat(seqs, ' ', i, math.min(i + 499, #seqs)))
    first = first or id
  end
  return first
end
end
