-- flow_cancel: jobs of this queue that a flow stops (docs/internals/flows.md). cancel: children of a
-- parent that failed or was cancelled (K_FLOW_CANCELS of its queue): each that has not started
-- (pending, delayed, waiting for children of its own) is cancelled, a parent among them
-- stopping its own children in turn; one leased is left to end (2: look again later), its
-- worker told to cancel it if it has not started it (flow jobs are never handed off); one
-- that ended (a kept completed job too) or is gone: 0. Their parent has ended: they write no notice. detach (obliterate,
-- which then removes them): each tells its parent that it was cancelled (`reason`) and stops its
-- own children.
--! keys: data dataBuckets meta callerIds delayed leased leaseHolders dead progress waitingChildren flowParent flowOutbox flowOutboxAt flowCancels eventLog completedJobs addedTimes jobLogs noticeChannel
--! keys: wake groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: mode:cancel|detach reason count seqs*count
-- Returns: per seq 1 cancelled (detached) | 0 ended or gone | 2 running; then what this call
--   wrote for its caller to deliver (flow_out_reply).
local mode, reason, count = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = now_ms()
local out = {}
for j = 1, count do
  local seq = ARGV[3 + j]
  local status = 0
  if not data_has(seq) or is_kept(seq) then
    -- Gone, or completed and kept (keepCompleted): it ended.
    status = 0
  elseif mode == 'detach' then
    flow_job_ended(seq, decode_meta(rcall('HGET', K_META, seq)), 'x', reason, now)
    status = 1
  elseif rcall('ZSCORE', K_LEASED, seq) then
    -- Leased: running, or prefetched by its worker and not started yet. That worker is asked
    -- to cancel it if it has not started it ('f:' notice, lib/worker/cancels.ts); a running one
    -- ends.
    local token, holder = string.match(rcall('HGET', K_LEASE_HOLDERS, seq) or '', '^([^:]+):(.+)$')
    if holder and holder ~= '0' then
      rcall('PUBLISH', K_NOTICE_CHANNEL, 'f:' .. seq .. ':' .. token .. ':' .. holder)
    end
    status = 2
  elseif not rcall('ZSCORE', K_DEAD, seq) then
    local meta = decode_meta(rcall('HGET', K_META, seq))
    if meta.W then
      flow_stop_children(seq, now)
    end
    destroy(seq, meta)
    emit('cancelled', meta.i or seq, ev_group(meta))
    status = 1
  end
  out[j] = status
end
return flow_out_reply(out)
