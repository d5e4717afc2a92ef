/**
 * Looking at and managing a queue: cancel a job, read one, count every state, and clean (promote
 * due jobs, reclaim lapsed leases and dead workers, drop expired results and caller ids, make
 * the next ticks of schedules that need them), repair.
 */
import { randomBytes } from 'node:crypto';
import { errorMessage, invalid, redisError } from '../errors.js';
import { isPosInt, shown } from '../util/checks.js';
import { bounded } from '../redis/bounded.js';
import type { CleanReport, JobInfo, QueueCounts, RepairReport } from '../types/index.js';
import type { CancelAcks } from './cancel-acks.js';
import type { QueueContext } from './context.js';
import { repair } from './repair.js';
import type { FlowDelivery } from './flows/delivery.js';
import { flushQuietly } from './flows/delivery.js';
import { readChildCounts } from './flows/children.js';
import { num, str, type Raw, type Reply } from '../job/records.js';
import { jobView } from '../job/views.js';
import { parseJson } from '../job/codec.js';

const CLEAN_LIMIT = 1000;
/** The most due schedules, and dead workers, one clean call reports (made one by one here). */
const CLEAN_BATCH = 100;

/** What clean() calls for schedules due for their next ticks (lib/schedules). */
export interface ScheduleHook {
  topUpDue(ids: readonly string[]): Promise<number>;
}

export class Admin<T, R> {
  constructor(
    private readonly ctx: QueueContext,
    private readonly cancelAcks: CancelAcks,
    private readonly flows: FlowDelivery,
    private readonly schedules?: ScheduleHook,
  ) {}

  async cancel(id: string): Promise<boolean> {
    this.ctx.checkId(id);
    const o = this.ctx.options;
    const ack = randomBytes(8).toString('base64url');
    // 0 no such job, 1 cancelled, 2 cancelled and a live holder was told (wait for its ack);
    // + 10 for a flow job
    // (A holder that missed the notice may acknowledge while we wait: cancel.lua, cx:<token>.)
    const ackTtl = Math.max(60_000, o.commandTimeoutMs);
    const args = [id, ack, o.heartbeatTimeoutMs, ackTtl] as const;
    const r = (await this.ctx.run('cancel', args, { ackId: ack })) as number;
    if (r % 10 === 2) await this.cancelAcks.wait(ack);
    // A flow job: its parent learns, a parent's children are cancelled (docs/flows.md).
    if (r >= 10) await flushQuietly(this.flows, this.ctx, 'now');
    return r > 0;
  }

  async getJob(id: string): Promise<JobInfo<T, R> | null> {
    this.ctx.checkId(id);
    // { state, seq, payload (or result), meta, score, progress, added, started, holder }
    const r = (await this.ctx.run('get_job', [id], { buffers: true })) as Reply;
    const state = str(r[0]) as JobInfo['state'];
    if (state === 'unknown') return null;
    if (state === 'completed' && str(r[1]) === '') {
      // Not kept: its stored result, or its caller id within the dedupe window.
      const info: JobInfo<T, R> = { id, state };
      if (num(r[4]) !== 1) return info; // a caller id within its dedupe window, no result kept
      try {
        info.result = parseJson<R>(str(r[2]), 'result');
      } catch (e) {
        info.decodeError = errorMessage(e);
      }
      return info;
    }
    const [, seq, raw, meta, score, prog, added, started, holder] = r;
    const info = jobView<T, R>(this.ctx, {
      id,
      state,
      raw: raw as Raw,
      rawMeta: str(meta),
      score: score!,
      prog: prog!,
      added: added!,
      started: started!,
      holder: holder!,
    });
    // A flow parent's children (a kept completed one's went when it ended: none left to count).
    if (state !== 'completed' && str(meta).includes('"W":'))
      info.children = await readChildCounts(this.flows.runner, this.ctx.name, str(seq));
    return info;
  }

  /** `liveUpTo`: see counts.lua (whenIdle's read; 0 for counts()). */
  async counts(liveUpTo = 0): Promise<QueueCounts> {
    // { p0..p9 lengths, delayed, leased, dead, live workers, Redis time, kept completed,
    //   waiting for children }
    const args = [this.ctx.options.heartbeatTimeoutMs, liveUpTo] as const;
    const r = (await this.ctx.run('counts', args)) as number[];
    const pendingByPriority = r.slice(0, 10);
    return {
      pendingByPriority,
      pending: pendingByPriority.reduce((a, b) => a + b, 0),
      delayed: r[10]!,
      leased: r[11]!,
      dead: r[12]!,
      workers: r[13]!,
      completed: r[15]!,
      waitingChildren: r[16]!,
    };
  }

  async clean(): Promise<CleanReport> {
    const o = this.ctx.options;
    const report: CleanReport = {
      promoted: 0,
      reclaimed: 0,
      deadLettered: 0,
      deadWorkers: 0,
      reclaimedFromWorkers: 0,
      resultsExpired: 0,
      callerIdsFreed: 0,
      completedTrimmed: 0,
    };
    let flowWork = false;
    const hb = o.heartbeatTimeoutMs;
    // Schedules and dead workers seen by this clean: a full batch calls again while it brought
    // new ones (any number of schedules due at once get their ticks in one clean), and one whose
    // top-up failed (logged) is not tried again until the next clean.
    const seenSchedules = new Set<string>();
    const seenWorkers = new Set<string>();
    const unseen = (seen: Set<string>, ids: string[]) =>
      ids.filter((id) => !seen.has(id) && seen.add(id));
    for (;;) {
      // { promoted, reclaimed, dead-lettered, results dropped, caller ids freed, flow work left,
      //   Redis now, kept completed jobs trimmed, s, s schedules due, dead worker ids… }
      const r = (await this.ctx.run('clean', [
        CLEAN_LIMIT,
        o.maxLeaseExpiries,
        o.maxDead,
        hb,
        o.keepCompleted.count,
        o.keepCompleted.ageMs,
        CLEAN_BATCH,
      ])) as Reply;
      const [promoted = 0, reclaimed = 0, dead = 0, expired = 0, freed = 0] = r
        .slice(0, 5)
        .map(num);
      const trimmed = num(r[7]);
      report.promoted += promoted;
      report.reclaimed += reclaimed;
      report.deadLettered += dead;
      report.resultsExpired += expired;
      report.callerIdsFreed += freed;
      report.completedTrimmed += trimmed;
      if (num(r[5]) === 1) flowWork = true;
      const s = num(r[8]);
      const due = unseen(seenSchedules, r.slice(9, 9 + s).map(str));
      if (due.length > 0 && this.schedules) {
        const made = await this.schedules.topUpDue(due);
        if (made > 0) report.ticksMade = (report.ticksMade ?? 0) + made;
      }
      const d = num(r[9 + s]);
      const reclaim = async (workerId: string, sweep: 0 | 1) =>
        // { reclaimed, dead-lettered }, or { -1 } when the worker is alive after all
        (await this.ctx.run(
          'reclaim_worker',
          [workerId, hb, o.maxLeaseExpiries, o.maxDead, sweep],
          { workerId },
        )) as number[];
      const silent = unseen(seenWorkers, r.slice(10 + s, 10 + s + d).map(str));
      for (const workerId of silent) {
        const x = await reclaim(workerId, 0);
        if (x[0] === -1) continue;
        report.deadWorkers += 1;
        report.reclaimedFromWorkers += x[0]!;
        report.deadLettered += x[1]!;
      }
      // Reclaimed while parked: what their idle wait (maybe still blocked) took goes back.
      for (const workerId of r.slice(10 + s + d).map(str)) {
        const x = await reclaim(workerId, 1);
        if (x[0]! > 0) report.reclaimedFromWorkers += x[0]!;
      }
      const more =
        (s === CLEAN_BATCH && due.length > 0) || (d === CLEAN_BATCH && silent.length > 0);
      if (!more && Math.max(promoted, reclaimed + dead, expired, freed, trimmed) < CLEAN_LIMIT)
        break;
    }
    // Flow work that crashes left over (docs/internals/flows.md).
    if (!flowWork) return report;
    const flows = await this.flows.flush(this.ctx.name, 'due');
    if (flows.notices + flows.cancelled + flows.reservationsDropped > 0) report.flows = flows;
    return report;
  }

  async repair(): Promise<RepairReport> {
    await this.ctx.ready();
    try {
      return await repair(this.ctx, this.flows);
    } catch (e) {
      throw redisError(`queue ${this.ctx.name}: repair`, e);
    }
  }

  /** Take the clean guard for this round (see `WorkQueue.cleanIfDue`): true when `owner` got it. */
  async takeCleanGuard(intervalMs: number, owner: string): Promise<boolean> {
    const problems: string[] = [];
    if (!isPosInt(intervalMs))
      problems.push(`intervalMs must be a positive integer, got ${shown(intervalMs)}`);
    if (typeof owner !== 'string' || owner.length === 0 || owner.length > 256)
      problems.push('owner must be a string of 1-256 characters');
    if (problems.length) throw invalid(problems, `${this.ctx.name}: cleanIfDue refused`);
    const ttl = Math.max(1, intervalMs - Math.min(200, Math.floor(intervalMs / 10)));
    const c = this.ctx.client;
    const context = `queue ${this.ctx.name}: clean guard`;
    const taken = await bounded(c, this.ctx.options.commandTimeoutMs, context, () =>
      c.set(this.ctx.keys.cleanGuard, owner, 'PX', ttl, 'NX'),
    ).catch((e: unknown) => {
      throw redisError(context, e);
    });
    return taken === 'OK';
  }
}

export { CLEAN_LIMIT };
