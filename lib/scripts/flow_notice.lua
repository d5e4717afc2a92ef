-- flow_notice: deliver notices of ended children to their parents in this queue (the parent's
-- side of docs/internals/flows.md; the notices come from the children's queues' outboxes).
-- Idempotent by child: a notice its parent no longer awaits (applied before, or the parent is
-- gone) changes nothing; one for a parent that is reserved but not written yet is kept in the
-- parent's key e, applied when it is written (flow_add.lua).
--! keys: pending data dataBuckets meta callerIds delayed leased leaseHolders dead wake progress waitingChildren flowParent flowOutbox flowOutboxAt flowCancels flowReserved eventLog addedTimes jobLogs metricsCompleted metricsFailed metricsDead
--! keys: seqCounter groupPending groupsReady groupTurnCounter groupRunning groupLimits groupsLimited groupRate groupsPaused groups groupedPending
--! argv: child_queue count notices(child_seq notice)*count
-- child_queue: the queue of the children; notice: as its outbox holds it.
-- Returns: per notice 1 applied | 0 nothing to do | 2 kept for a parent not written yet; then
--   what this call wrote for its caller to deliver (flow_out_reply).
local cq, count = ARGV[1], tonumber(ARGV[2])
local now = now_ms()
local out = {}
for j = 1, count do
  local cseq, notice = ARGV[1 + 2 * j], ARGV[2 + 2 * j]
  local outcome, pseq, payload = flow_parse(notice)
  local status = 0
  if outcome then
    status = flow_apply(pseq, cq, cseq, outcome, payload, now)
    if status == 0 and not rcall('ZSCORE', K_WAITING_CHILDREN, pseq) and flow_reserved(pseq) then
      rcall('HSET', flow_pkey('e', pseq), cq .. ':' .. cseq, notice)
      status = 2
    end
  end
  out[j] = status
end
-- (Parents a failed child dead-lettered count in this queue's metrics.)
metrics_flush(now)
return flow_out_reply(out)
