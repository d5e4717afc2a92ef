/**
 * A queue's history (docs/history.md): job logs, per-minute metrics, the workers, kept
 * completed jobs (purge, rerun), and step jobs (a job's data updated, a job put back to sleep).
 * Each change is one script; the reads are scripts or a pipeline of reads of one slot.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { invalid, redisError, WorkQueueError } from '../errors.js';
import { AddProblems } from '../job/add-options.js';
import { encode } from '../job/codec.js';
import { packLogs, type LogBatch } from '../job/logs.js';
import { num, str, type Raw, type Reply } from '../job/records.js';
import { bounded } from '../redis/bounded.js';
import type {
  JobLogs,
  Lease,
  Metrics,
  MetricsKind,
  MetricsOptions,
  WorkerInfo,
} from '../types/index.js';
import {
  delayMsProblem,
  malformedProblem,
  optionsObject,
  pageOf,
  runAtProblem,
  shown,
} from '../util/checks.js';
import type { QueueContext, ScriptArgs } from './context.js';

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;
const KINDS: readonly MetricsKind[] = ['completed', 'failed', 'dead'];
/** Largest page of `getJobLogs`. */
const MAX_LOG_PAGE = 1000;
/** Most workers `getWorkers` lists. */
const MAX_WORKERS = 10_000;

/** A delay argument: ms from now (an integer 0..MAX_DELAY_MS) or a Date; its problem, if any. */
function delayProblem(what: string, d: unknown): string | undefined {
  return d instanceof Date ? runAtProblem(what, d) : delayMsProblem(what, d);
}

/** A checked delay as the scripts take it: 'd<ms>' from now, 'a<ms>' at (Redis time). */
export function delaySchedule(d: number | Date): string {
  return d instanceof Date ? `a${Math.floor(d.getTime())}` : `d${d}`;
}

export class History<T> {
  constructor(private readonly ctx: QueueContext) {}

  async getJobLogs(id: string, opts: { offset?: number; limit?: number } = {}): Promise<JobLogs> {
    const problems = this.idProblems(id);
    const { offset, limit } = pageOf(opts, MAX_LOG_PAGE, problems);
    if (problems.length) throw invalid(problems, `${this.ctx.name}: getJobLogs refused`);
    // { lines kept, lines dropped, page… } or { -1 }
    const r = (await this.ctx.run('get_logs', [id, offset, limit])) as Reply;
    if (num(r[0]) < 0) throw new WorkQueueError('NOT_FOUND', `${this.ctx.name}: no job ${id}`);
    return { count: num(r[0]), dropped: num(r[1]), lines: r.slice(2).map(str) };
  }

  async getMetrics(kind: MetricsKind, opts: MetricsOptions = {}): Promise<Metrics> {
    const problems: string[] = [];
    const o: MetricsOptions = optionsObject('options', opts, ['sinceMs', 'untilMs'], problems);
    if (!KINDS.includes(kind))
      problems.push(`kind must be one of ${KINDS.join(', ')}, got ${shown(kind)}`);
    for (const k of ['sinceMs', 'untilMs'] as const) {
      const v = o[k];
      if (v !== undefined && !(Number.isSafeInteger(v) && v >= 0))
        problems.push(`${k} must be an integer >= 0 (Redis ms), got ${shown(v)}`);
    }
    if (problems.length === 0 && o.sinceMs !== undefined && o.untilMs !== undefined)
      if (o.sinceMs > o.untilMs) problems.push('sinceMs must not be after untilMs');
    if (problems.length) throw invalid(problems, `${this.ctx.name}: getMetrics refused`);
    // { Redis now, ring: u32 pairs (minute, count) }
    const r = (await this.ctx.run('get_metrics', [kind], { binary: true })) as Reply;
    const now = num(r[0]);
    const ring = Buffer.isBuffer(r[1]) ? r[1] : Buffer.from(str(r[1]), 'latin1');
    const oldest = Math.floor((now - DAY_MS) / MINUTE_MS) + 1;
    const since = Math.floor(Math.max(o.sinceMs ?? 0, now - DAY_MS) / MINUTE_MS);
    const until = Math.min(o.untilMs ?? now, now);
    const perMinute: Metrics['perMinute'] = [];
    let total = 0;
    for (let i = 0; i + 8 <= ring.length; i += 8) {
      const minute = ring.readUInt32BE(i);
      const count = ring.readUInt32BE(i + 4);
      const at = minute * MINUTE_MS;
      if (count === 0 || minute < oldest || minute < since || at > until) continue;
      perMinute.push({ at, count });
      total += count;
    }
    perMinute.sort((a, b) => a.at - b.at);
    return { perMinute, total };
  }

  async getWorkers(): Promise<WorkerInfo[]> {
    const { client, keys, name, options } = this.ctx;
    // { Redis now, then per worker: id, last beat, info }
    const r = ((await this.ctx.run('list_workers', [MAX_WORKERS])) as Reply).map(str);
    const now = Number(r[0]);
    const context = `queue ${name}: getWorkers`;
    const ids: string[] = [];
    for (let i = 1; i + 2 < r.length; i += 3) ids.push(r[i]!);
    const held = await Promise.all(
      ids.map((w) =>
        bounded(client, options.commandTimeoutMs, context, () =>
          client.scard(keys.workerLeases(w)),
        ).catch((e: unknown) => {
          throw redisError(context, e);
        }),
      ),
    );
    return ids.map((id, k) => {
      const raw = r[3 * k + 3]!;
      const colon = raw.indexOf(':');
      let info: { host?: unknown; pid?: unknown; name?: unknown; concurrency?: unknown } = {};
      try {
        info = JSON.parse(raw.slice(colon + 1)) as typeof info;
      } catch {
        /* not registered by this version, or written by hand: unknown */
      }
      const w: WorkerInfo = {
        id,
        host: typeof info.host === 'string' ? info.host : '',
        pid: typeof info.pid === 'number' ? info.pid : 0,
        concurrency: typeof info.concurrency === 'number' ? info.concurrency : 0,
        running: held[k]!,
        startedAt: colon > 0 ? Number(raw.slice(0, colon)) || 0 : 0,
        // A starting worker's bridge beat counts a grace period ahead (heartbeat.lua): now.
        lastBeatAt: Math.min(Number(r[3 * k + 2]), now),
      };
      if (typeof info.name === 'string') w.name = info.name;
      return w;
    });
  }

  /** What a worker registers (getWorkers shows it). */
  static registration(o: { name?: string; concurrency?: number } = {}): string {
    return JSON.stringify({ host: hostname(), pid: process.pid, ...o });
  }

  async updateData(id: string, data: T): Promise<boolean> {
    // Every problem at once: the id's and the data's (whose code wins, as for add).
    const problems = new AddProblems();
    for (const p of this.idProblems(id)) problems.push(p);
    let payload: ReturnType<typeof encode> | undefined;
    try {
      payload = encode(this.ctx.options, data);
    } catch (e) {
      if (!(e instanceof WorkQueueError)) throw e;
      problems.payload(`data: ${e.message}`, e.code);
    }
    if (problems.list.length || payload === undefined)
      throw problems.error(`${this.ctx.name}: updateData refused`);
    // 1 updated, 0 no such job, 2 leased, 3 completed
    const r = await this.ctx.run('update_data', ['id', id, payload]);
    if (r === 2 || r === 3) throw this.badState('updateData', id, r === 2 ? 'leased' : 'completed');
    return r === 1;
  }

  async changeDelay(id: string, delay: number | Date): Promise<boolean> {
    const problems = this.idProblems(id);
    const p = delayProblem('delay', delay);
    if (p) problems.push(p);
    if (problems.length) throw invalid(problems, `${this.ctx.name}: changeDelay refused`);
    // { 1, due } changed, { 0 } no such job, { 2 } leased, { 3 } completed, { 4 } dead,
    // { 5 } a parent waiting for its children
    const r = (await this.ctx.run('change_delay', [id, delaySchedule(delay)])) as number[];
    const state = ({ 2: 'leased', 3: 'completed', 4: 'dead', 5: 'waiting-children' } as const)[
      r[0] as 2 | 3 | 4 | 5
    ];
    if (state) throw this.badState('changeDelay', id, state);
    return r[0] === 1;
  }

  async rerun(id: string): Promise<string | null> {
    const problems = this.idProblems(id);
    if (problems.length) throw invalid(problems, `${this.ctx.name}: rerun refused`);
    // the new job's public id, 0 not kept, -1 dead, or E_BAD_STATE (caught: a live job has the id)
    let r: unknown;
    try {
      // (Its token: a re-send of this call, its reply lost, answers the job it made.)
      r = await this.ctx.run('completed_jobs', ['rerun', id, randomBytes(9).toString('base64url')]);
    } catch (e) {
      if (e instanceof WorkQueueError && e.code === 'BAD_STATE')
        throw new WorkQueueError(
          'BAD_STATE',
          `${this.ctx.name}: rerun(${id}): the id names a job that waits or runs (a newer incarnation, or one not completed yet); only a kept completed job runs again`,
        );
      throw e;
    }
    if (r === -1)
      throw new WorkQueueError(
        'BAD_STATE',
        `${this.ctx.name}: rerun(${id}): the job is dead-lettered, not completed (retryDead(id) runs it again)`,
      );
    return r === 0 ? null : str(r as Raw);
  }

  async purgeCompleted(id: string | undefined, page: number): Promise<number> {
    if (id !== undefined) {
      const problems = this.idProblems(id);
      if (problems.length) throw invalid(problems, `${this.ctx.name}: purgeCompleted refused`);
      return (await this.ctx.run('completed_jobs', ['purge', id])) as number;
    }
    let total = 0;
    for (;;) {
      const n = (await this.ctx.run('completed_jobs', ['purgeall', page])) as number;
      total += n;
      if (n < page) return total;
    }
  }

  /** job.updateData: the payload of a leased job, fenced by its lease. False: the lease is lost. */
  async updateLeased(lease: Lease, data: T): Promise<boolean> {
    this.ctx.checkLease(lease);
    const payload = encode(this.ctx.options, data);
    const { seq, token, workerId } = lease;
    const r = await this.ctx.run('update_data', ['lease', seq, token, workerId, payload], {
      workerId,
    });
    return r === 1;
  }

  /**
   * A handler's DelayedError: the job waits until `delay` (ms from now, or a Date), no attempt
   * counted. Resolves when it is due (Redis ms), or undefined when the lease was lost.
   */
  async moveToDelayed(
    lease: Lease,
    delay: number | Date,
    logs?: LogBatch,
  ): Promise<number | undefined> {
    this.ctx.checkLease(lease);
    const p = delayProblem('delay', delay);
    if (p) throw invalid([p], `${this.ctx.name}: moveToDelayed refused`);
    const { seq, token, workerId } = lease;
    const lines = logs ? packLogs([{ seq, logs }]) : '';
    const max = this.ctx.options.maxLogLines;
    const args: ScriptArgs['move_to_delayed'] = [
      seq,
      token,
      workerId,
      delaySchedule(delay),
      max,
      lines,
    ];
    // { 1, due } or E_LEASE_LOST
    const r = await this.ctx.run('move_to_delayed', args, { workerId });
    return Array.isArray(r) ? num(r[1] as number) : undefined;
  }

  private idProblems(id: unknown): string[] {
    if (typeof id !== 'string' || id.length === 0 || id.length > 256)
      return ['id must be a string of 1-256 characters'];
    const malformed = malformedProblem('id', id);
    return malformed ? [malformed] : [];
  }

  private badState(op: string, id: string, state: string): WorkQueueError {
    return new WorkQueueError(
      'BAD_STATE',
      `${this.ctx.name}: ${op}(${id}): the job is ${state}; only a waiting (pending or delayed)${op === 'updateData' ? ' or dead-lettered' : ''} job can be changed`,
    );
  }
}
