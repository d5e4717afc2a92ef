-- Kept completed jobs (keepCompleted, docs/history.md): a completed job keeps its payload, meta,
-- times and log, and enters K_COMPLETED_JOBS (seq -> finished ms) with its K_COMPLETED_INFO
-- ('<worker id>/<lease token>:<attempts made>', then ':<result>' when a result came with its
-- completion; the token of the lease that completed it tells a Worker's re-send of that complete
-- from a complete of a later lease of the same job: complete_and_lease.lua).
-- The newest `count`, at most `age_ms` old, are kept: the scripts that complete jobs trim what
-- they pushed over the bound, clean() what aged (trim_completed, bounded per call).

-- Most kept jobs one call trims (the rest go with the next call).
local TRIM_LIMIT = 1000

-- Most bytes of a result carried by a 'completed' event (larger: its size only, 'vx').
local EVENT_RESULT_MAX = 1024

-- Keep completed jobs `seqs` (their meta JSON in `raws`, their results in `results`: '' or nil
-- when none) finished at `now` by worker `wid` under lease tokens `tokens`.
local function keep_completed(seqs, raws, results, now, wid, tokens)
  if #seqs == 0 then
    return
  end
  local z, h = {}, {}
  local at = int(now) -- one string, not a number formatted per job
  local by = wid .. '/'
  for i = 1, #seqs do
    local seq = seqs[i]
    local raw = raws[i]
    -- (A number concatenated is formatted with printf: ~3k instructions.)
    local info = by .. tokens[i] .. ':1' -- completed at its first attempt
    if raw and string.find(raw, '"a":', 1, true) then
      info = by .. tokens[i] .. ':' .. int((decode_meta(raw).a or 0) + 1)
    end
    if results[i] and results[i] ~= '' then
      info = info .. ':' .. results[i]
    end
    z[2 * i - 1] = at
    z[2 * i] = seq
    h[2 * i - 1] = seq
    h[2 * i] = info
  end
  rcall_each('ZADD', K_COMPLETED_JOBS, z)
  rcall_each('HSET', K_COMPLETED_INFO, h)
end

-- A job completed by a stale lease (a worker whose lease lapsed finished it after all) leaves
-- wherever it is now to be kept: the leased set, the delayed set, the dead set (its dead reason
-- dropped) or its pending list (LREM: it was put back at the front when its lease lapsed, so it
-- is near the head).
-- A grouped job leaves its group's pending jobs, or its group's running count.
local function completed_unplace(seq, meta)
  if meta.g then
    group_unplace(seq, meta)
  end
  rcall('ZREM', K_LEASED, seq)
  rcall('HDEL', K_LEASE_HOLDERS, seq)
  lease_unpad()
  local was_dead = rcall('ZREM', K_DEAD, seq) == 1
  if was_dead and meta.r then
    -- Completed after all: its dead-lettering's reason is no longer what happened to it.
    meta.r = nil
    save_meta(seq, meta)
  end
  if rcall('ZREM', K_DELAYED, seq) == 0 and not was_dead and not meta.g then
    rcall('LREM', pending_key(prio_of(meta)), 1, seq)
  end
end

-- Remove kept completed jobs `seqs` (their meta JSON `raws`): payload, meta, info, progress, log;
-- a caller id still naming one ('~<until>:<seq>') keeps only its dedupe window, or goes.
local function forget_completed(seqs, raws, now)
  for i = 1, #seqs do
    local raw = raws[i]
    if raw and string.find(raw, '"i":', 1, true) then
      local cid = decode_meta(raw).i
      local v = cid and rcall('HGET', K_CALLER_IDS, cid)
      if v and kept_of(v) == seqs[i] then
        local until_ms = taken_until(v)
        if until_ms > now then
          rcall('HSET', K_CALLER_IDS, cid, '~' .. int(until_ms))
        else
          rcall('HDEL', K_CALLER_IDS, cid)
        end
      end
    end
  end
  logs_drop(seqs, raws)
  data_del(seqs)
  if next(raws) then -- (metas_of gives none when no job has meta)
    rcall_each('HDEL', K_META, seqs)
  end
  rcall_each('HDEL', K_COMPLETED_INFO, seqs)
  if rcall('EXISTS', K_PROGRESS) == 1 then
    rcall_each('HDEL', K_PROGRESS, seqs)
  end
end

-- Sort `seqs` by number (a seq that is not one counts as 0): numbers sort in C, far cheaper
-- than a Lua comparator per comparison.
local function by_seq(seqs)
  local nums, of = {}, {}
  for i, seq in ipairs(seqs) do
    local n = tonumber(seq)
    if not n or of[n] then
      table.sort(seqs, function(a, b)
        return (tonumber(a) or 0) < (tonumber(b) or 0)
      end)
      return
    end
    nums[i], of[n] = n, seq
  end
  table.sort(nums)
  for i, n in ipairs(nums) do
    seqs[i] = of[n]
  end
end

-- Whether seqs `group` all have one length (then a sorted set's order of them is by number).
local function one_length(group)
  local len = #group[1]
  for i = 2, #group do
    if #group[i] ~= len then
      return false
    end
  end
  return true
end

-- Remove the `take` oldest kept completed jobs: by finish time, then by seq (a sorted set orders
-- equal scores by the member's bytes, which puts '10' before '9'). The first `take` by rank are
-- they unless the last finish time among them has more jobs than fit (a batch's, at most) of
-- different lengths: then the rest of that time's jobs are read to cut it exactly. No scores
-- are read into Lua (Redis formats each with printf: ~3k instructions a job). They go with ZREM
-- (the minimal ACL, docs/reliability-and-security.md, has no ZREMRANGEBYRANK). Returns them.
local function take_oldest_completed(take)
  local seqs = rcall('ZRANGE', K_COMPLETED_JOBS, '0', int(take - 1))
  local last = rcall('ZSCORE', K_COMPLETED_JOBS, seqs[#seqs])
  local below = rcall('ZCOUNT', K_COMPLETED_JOBS, '-inf', '(' .. last)
  local stop = below + rcall('ZCOUNT', K_COMPLETED_JOBS, last, last) -- past that time's last rank
  if stop > #seqs then
    local group = {} -- that time's jobs: those taken, then the rest
    for i = below + 1, #seqs do
      group[#group + 1] = seqs[i]
    end
    for _, seq in ipairs(rcall('ZRANGE', K_COMPLETED_JOBS, #seqs, stop - 1)) do
      group[#group + 1] = seq
    end
    if not one_length(group) then
      by_seq(group)
      for i = below + 1, #seqs do
        seqs[i] = group[i - below]
      end
    end
  end
  rcall_each('ZREM', K_COMPLETED_JOBS, seqs)
  return seqs
end

-- Trim the kept completed jobs to the newest `count`, none finished before now - age_ms, at most
-- `limit` per call (oldest first). Returns how many went.
local function trim_completed(now, count, age_ms, limit)
  local over = rcall('ZCARD', K_COMPLETED_JOBS) - count
  local aged = rcall('ZCOUNT', K_COMPLETED_JOBS, '-inf', '(' .. int(now - age_ms))
  local take = math.min(math.max(over, aged), limit)
  if take <= 0 then
    return 0
  end
  local seqs = take_oldest_completed(take)
  forget_completed(seqs, metas_of(seqs), now)
  return take
end

-- Kept jobs `seqs` sorted newest first: by seq, highest first (those of one finish time).
local function newest_first(seqs)
  table.sort(seqs, function(a, b)
    return (tonumber(a) or 0) > (tonumber(b) or 0)
  end)
  return seqs
end

-- A page of the kept completed jobs, newest first: by finish time, then by seq (a sorted set
-- orders equal scores by the member's bytes, which puts '9' before '10'). The jobs of the page's
-- first and last finish times are read whole (one batch's, at most) to place them exactly.
-- Returns their seqs and finish times.
local function completed_page(offset, limit)
  local got = rcall('ZREVRANGE', K_COMPLETED_JOBS, offset, offset + limit - 1, 'WITHSCORES')
  local runs = {}
  for i = 1, #got, 2 do
    local r = runs[#runs]
    if not r or r.score ~= got[i + 1] then
      r = { score = got[i + 1], seqs = {} }
      runs[#runs + 1] = r
    end
    r.seqs[#r.seqs + 1] = got[i]
  end
  local seqs, scores = {}, {}
  local stop = offset + limit
  local start = 0 -- rank of the first job of the run (newest first)
  for k, r in ipairs(runs) do
    local group = r.seqs
    if k == 1 then
      start = rcall('ZCOUNT', K_COMPLETED_JOBS, '(' .. r.score, '+inf')
    end
    if k == 1 or k == #runs then
      group = rcall('ZRANGEBYSCORE', K_COMPLETED_JOBS, r.score, r.score)
    end
    newest_first(group)
    for i, seq in ipairs(group) do
      local rank = start + i - 1
      if rank >= offset and rank < stop then
        seqs[#seqs + 1] = seq
        scores[#seqs] = r.score
      end
    end
    start = start + #group
  end
  return seqs, scores
end

-- Whether any of the first `n` of `results` is a result ('' or nil: none).
local function with_result(results, n)
  for i = 1, n do
    local r = results[i]
    if r and r ~= '' then
      return true
    end
  end
  return false
end

-- Log 'completed' for jobs `seqs` (meta JSON `raws`) finished at `now` by worker `wid`: with
-- their times (a 'tm' trailer: ms before 'T', added and started), and their results when
-- `readable` (stored or kept: 'r' 1; a job with a result gets its own entry, 'v' its result up to
-- EVENT_RESULT_MAX bytes, else 'vx' its size). `known` (optional): their groups as emit_jobs takes
-- them.
local function emit_completed(seqs, raws, results, now, wid, readable, known)
  if not EV_ON or #seqs == 0 then
    return
  end
  local head = { 'w', wid, 'T', int(now) } -- (a number field: printf '%.17g' in XADD)
  if readable then
    head[#head + 1] = 'r'
    head[#head + 1] = '1'
  end
  if not readable or not with_result(results, #seqs) then
    emit_jobs('completed', seqs, raws, head, time_tails(seqs, now), known)
    return
  end
  local added, started = times_get(seqs)
  local tails = time_deltas(now, added, started)
  local plain, plain_raws, plain_tails = {}, {}, {}
  local plain_known = known and {}
  local f = nil
  for i, seq in ipairs(seqs) do
    local r = readable and results[i]
    if r and r ~= '' then
      if not f then
        f = { 'e', 'completed', unpack(head) }
      end
      local raw = raws[i]
      f[#f + 1] = 'i'
      f[#f + 1] = raw and string.find(raw, '"i":', 1, true) and decode_meta(raw).i or seq
      if #r <= EVENT_RESULT_MAX then
        f[#f + 1] = 'v'
        f[#f + 1] = r
      else
        f[#f + 1] = 'vx'
        f[#f + 1] = #r
      end
      local g = raw and meta_group(raw)
      if g then
        f[#f + 1] = 'g'
        f[#f + 1] = g
      end
      f[#f + 1] = 'ta'
      f[#f + 1] = added[i]
      f[#f + 1] = 'ts'
      f[#f + 1] = started[i]
      -- A section of jobs with results stays below unpack's limit (~8000 values): the next
      -- ones go in a section of their own.
      if #f >= EV_MAX_FIELDS then
        ev_add(f)
        f = nil
      end
    else
      plain[#plain + 1] = seq
      plain_raws[#plain] = raws[i]
      plain_tails[#plain] = tails[i]
      if known then
        plain_known[#plain] = known[i]
      end
    end
  end
  emit_jobs('completed', plain, plain_raws, head, plain_tails, plain_known)
  if f then
    ev_add(f)
  end
end
