-- Job times (docs/history.md): when a job was added and when its current or last lease started,
-- read by the events, listings and getJob.

-- Times: per payload bucket b (data.lua), the string K_ADDED_TIMES:<b> holds two u48 slots per
-- seq n of the bucket: slot 2·(n mod DATA_SPAN) its added time, 2·(n mod DATA_SPAN)+1 the start
-- of its current or last lease (Redis ms; 0 = not known). Adds write them with one BITFIELD per
-- bucket per call; leases and reads take the bucket's string whole (GET, SETRANGE: byte
-- 12·(n mod DATA_SPAN) + 1 is its added slot), but a call of one job its two slots (one
-- BITFIELD).
-- The string goes with its bucket (data_del); seqs that are not counter values (bucket 'x')
-- have no times.

-- Run BITFIELD (`cmd`) on the time buckets of `seqs`, each job's operations given by `ops(slot)`
-- (slot: its added slot number); calls `each(i, reply, k)` for the job at position i of `seqs`,
-- its operations' replies starting at reply[k].
local function times_call(cmd, seqs, ops, per_job, each)
  local order, groups = data_groups(seqs)
  for _, b in ipairs(order) do
    if b ~= 'x' then
      local args = { K_ADDED_TIMES .. ':' .. b }
      for _, seq in ipairs(groups[b].seqs) do
        ops(args, 2 * (tonumber(seq) % DATA_SPAN))
      end
      local r = rcall(cmd, unpack(args))
      if each then
        for k, i in ipairs(groups[b].at) do
          each(i, r, (k - 1) * per_job + 1)
        end
      end
    end
  end
end

local function bitfield_op(args, op, slot, value)
  args[#args + 1] = op
  args[#args + 1] = 'u48'
  args[#args + 1] = '#' .. slot
  if value then
    args[#args + 1] = value
  end
end

-- Record `now` as the added time of `seqs` (every add path).
local function times_set_added(seqs, now)
  times_call('BITFIELD', seqs, function(args, slot)
    bitfield_op(args, 'SET', slot, now)
  end, 1, nil)
end

-- The 6 bytes of u48 `v` (an integer).
local function u48_bytes(v)
  local b6 = v % 256
  v = (v - b6) / 256
  local b5 = v % 256
  v = (v - b5) / 256
  local b4 = v % 256
  v = (v - b4) / 256
  local b3 = v % 256
  v = (v - b3) / 256
  local b2 = v % 256
  return string.char((v - b2) / 256 % 256, b2, b3, b4, b5, b6)
end

-- times_set_added for one add call's new jobs (add_plain.lua), the `n` consecutive counter seqs
-- base + 1 … base + n: their slots are one run of bytes per bucket they span (at most DATA_SPAN
-- jobs), written by one SETRANGE each (the bytes BITFIELD SET u48 would write; a new job's
-- started slot is 0), without a BITFIELD operation (four arguments) per job. `stamp`:
-- u48_bytes(now). `started` (optional): the position of one of them whose lease starts at `now`
-- too (a hand-off): its started slot is `stamp` as well. `name` (optional): the first bucket's
-- name, when the caller has it (data_bucket's).
local function times_set_added_run(base, n, stamp, started, name)
  local pair = stamp .. '\0\0\0\0\0\0'
  local b = math.floor((base + 1) / DATA_SPAN)
  local j = 1 -- the first job of bucket b
  while j <= n do
    local k = math.min(n, (b + 1) * DATA_SPAN - 1 - base) -- its last
    -- (The last job's started slot is left out: the string ends where BITFIELD's would.)
    local run
    if started and started >= j and started <= k then
      run = string.rep(pair, started - j) .. stamp .. stamp
      if started < k then
        run = run .. string.rep(pair, k - started - 1) .. stamp
      end
    else
      run = string.rep(pair, k - j) .. stamp
    end
    rcall('SETRANGE', K_ADDED_TIMES .. ':' .. (name or int(b)), int(12 * ((base + j) % DATA_SPAN)), run)
    j, b, name = k + 1, b + 1, nil
  end
end

-- Record `now` as the added time of the jobs of `pairs` ({ seq, payload, seq, payload, … }).
local function times_added_pairs(pairs, now)
  local seqs = {}
  for i = 1, #pairs, 2 do
    seqs[#seqs + 1] = pairs[i]
  end
  times_set_added(seqs, now)
end

-- The u48 at byte `at` (1-based) of a times string: 6 bytes big-endian, as BITFIELD writes a
-- u48 at a multiple of 48 bits (bytes past the string's end read 0, as BITFIELD reads them).
local function u48_at(s, at)
  local b1, b2, b3, b4, b5, b6 = string.byte(s, at, at + 5)
  return (((((b1 or 0) * 256 + (b2 or 0)) * 256 + (b3 or 0)) * 256 + (b4 or 0)) * 256 + (b5 or 0))
      * 256
    + (b6 or 0)
end

-- Record `now` as the start of the lease of `seqs` (lease_jobs, hand_off); returns their added
-- times, in order (0 when not known). Per bucket one GET and one SETRANGE writing back the
-- string up to the last slot set, with `now` in the started slots. (No grouping tables, and each
-- seq read as a number once: this runs for every leased job.)
local function times_set_started(seqs, now)
  if #seqs == 1 then
    -- One job (a hand-off, a one-job lease): its two slots in one BITFIELD, not the bucket's
    -- string (a string entering Lua costs by its length: up to 1.5 KB read and written back).
    local n = seq_number(seqs[1])
    if not n then
      return { 0 }
    end
    local slot = 2 * (n % DATA_SPAN)
    local key = K_ADDED_TIMES .. ':' .. data_bucket(seqs[1])
    return { rcall('BITFIELD', key, 'GET', 'u48', '#' .. slot, 'SET', 'u48', '#' .. (slot + 1), int(now))[1] }
  end
  local added = {}
  local order, per = {}, {} -- the buckets in first-seen order; per bucket number its state
  for i = 1, #seqs do
    local seq = seqs[i]
    added[i] = 0
    local n = seq_number(seq)
    if n then
      local r = n % DATA_SPAN
      local b = (n - r) / DATA_SPAN
      local p = per[b]
      if not p then
        local key = K_ADDED_TIMES .. ':' .. data_bucket(seq)
        p = { key = key, s = rcall('GET', key) or '', slots = {}, n = 0, sorted = true }
        per[b] = p
        order[#order + 1] = b
      end
      local at = 12 * r + 1
      added[i] = u48_at(p.s, at)
      local k = p.n + 1
      p.n = k
      if k > 1 and p.slots[k - 1] >= at + 6 then
        p.sorted = false
      end
      p.slots[k] = at + 6
    end
  end
  local stamp = u48_bytes(now)
  for _, b in ipairs(order) do
    local p = per[b]
    local s, slots = p.s, p.slots
    if not p.sorted then -- (leased in order, they mostly are: a sort is ~0.5k instructions a job)
      table.sort(slots)
    end
    local last = slots[#slots] + 5
    if #s < last then
      s = s .. string.rep('\0', last - #s)
    end
    local parts, pos, k = {}, 1, 0
    for j = 1, #slots do
      local at = slots[j]
      if at >= pos then -- (a seq named twice is set once)
        parts[k + 1] = string.sub(s, pos, at - 1)
        parts[k + 2] = stamp
        k = k + 2
        pos = at + 6
      end
    end
    rcall('SETRANGE', p.key, '0', table.concat(parts))
  end
  return added
end

-- The times string of job `seq`'s bucket (read once per bucket into `strings`: bucket number ->
-- string) and the byte of its added slot; nil for a seq that is not a counter value (no times).
local function times_slot(strings, seq)
  local n = seq_number(seq)
  if not n then
    return nil
  end
  local r = n % DATA_SPAN
  local b = (n - r) / DATA_SPAN
  local s = strings[b]
  if not s then
    s = rcall('GET', K_ADDED_TIMES .. ':' .. data_bucket(seq)) or ''
    strings[b] = s
  end
  return s, 12 * r + 1
end

-- The times of `seqs`, in order: added, started (0 when not known). One GET per bucket, read
-- as its first job comes (no grouping tables: this runs for every completed job's event).
local function times_get(seqs)
  local added, started = {}, {}
  local strings = {}
  for i, seq in ipairs(seqs) do
    local s, at = times_slot(strings, seq)
    if s then
      added[i], started[i] = u48_at(s, at), u48_at(s, at + 6)
    else
      added[i], started[i] = 0, 0
    end
  end
  return added, started
end

-- Per job, its times as an event's section tail ('tm', lib/scripts/lib/events.lua) gives them:
-- ms before the section's 'T' (its time), '' when not known; `started` optional. Jobs added or
-- leased together share their times: each distinct time is formatted once (string.format is
-- printf, ~1k instructions), each distinct pair of them joined once.
local function time_deltas(now, added, started)
  local out, ints, pairs_of = {}, { [0] = '' }, {}
  local function before(t)
    local d = ints[t]
    if not d then
      d = t > 0 and int(now - t) or ''
      ints[t] = d
    end
    return d
  end
  for i = 1, #added do
    local a = added[i]
    if started then
      local row = pairs_of[a]
      if not row then
        row = {}
        pairs_of[a] = row
      end
      local s = started[i]
      local d = row[s]
      if not d then
        d = before(a) .. ',' .. before(s)
        row[s] = d
      end
      out[i] = d
    else
      out[i] = before(a)
    end
  end
  return out
end

-- time_deltas(now, times_get(seqs)) for the 'completed' event of a call's jobs, cheaper: jobs
-- added together and leased together share the 12 bytes of their times, so each distinct slot is
-- decoded and formatted once.
local function time_tails(seqs, now)
  if #seqs == 1 then
    -- One job: its two slots, not its bucket's string (as in times_set_started).
    local n = seq_number(seqs[1])
    if not n then
      return { ',' }
    end
    local slot = 2 * (n % DATA_SPAN)
    local key = K_ADDED_TIMES .. ':' .. data_bucket(seqs[1])
    local t = rcall('BITFIELD', key, 'GET', 'u48', '#' .. slot, 'GET', 'u48', '#' .. (slot + 1))
    local a, st = t[1], t[2]
    return { (a > 0 and int(now - a) or '') .. ',' .. (st > 0 and int(now - st) or '') }
  end
  local out, memo, strings = {}, {}, {}
  for i = 1, #seqs do
    local seq = seqs[i]
    local d = ','
    local s, at = times_slot(strings, seq)
    if s then
      local slot = string.sub(s, at, at + 11)
      d = memo[slot]
      if not d then
        local a, st = u48_at(s, at), u48_at(s, at + 6)
        d = (a > 0 and int(now - a) or '') .. ',' .. (st > 0 and int(now - st) or '')
        memo[slot] = d
      end
    end
    out[i] = d
  end
  return out
end
