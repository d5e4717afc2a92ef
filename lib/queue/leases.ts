/**
 * What lease holders do: lease jobs, complete them (and lease more in the same call), fail,
 * release, extend and report progress. Each is one script; replies are decoded here, next to
 * their calls.
 */
import { CALL_UNITS } from '../util/call-share.js';
import { errorMessage, invalid, MAX_ERROR_CHARS } from '../errors.js';
import type { FailOptions, FailOutcome, Lease, LeasedJob, LeaseOptions } from '../types/index.js';
import { encodeProgress, encodeResult } from '../job/codec.js';
import { packLogs, type LogBatch } from '../job/logs.js';
import { isPosInt, MAX_DELAY_MS, shown } from '../util/checks.js';
import type { QueueContext, ScriptArgs } from './context.js';
import { failArgs, leaseArgs, perWorker } from './lease-args.js';
import { readPayloads } from './lease-payloads.js';
import type {
  CompleteItem,
  CompleteReply,
  FailRecord,
  LeaseBatch,
  WorkerCallOptions,
} from './lease-types.js';
import {
  BATCH_FLAGS,
  BATCH_HEAD,
  decodeBatch,
  num,
  str,
  type Reply,
  type Unrunnable,
} from '../job/records.js';

export class Leases<T, R> {
  constructor(private readonly ctx: QueueContext) {}

  async leaseBatch(opts: LeaseOptions = {}): Promise<LeaseBatch<T>> {
    const { count, leaseMs, workerId } = leaseArgs(this.ctx, opts, true);
    const reply = (await this.ctx.run('lease', [count, leaseMs, workerId], {
      workerId,
      buffers: true,
    })) as Reply;
    return this.batch(reply, workerId);
  }

  async completeAndLease(
    items: ReadonlyArray<CompleteItem<R>>,
    next?: LeaseOptions,
    worker?: WorkerCallOptions,
  ): Promise<CompleteReply<T>> {
    if (!Array.isArray(items)) throw invalid(['completeAndLease takes an array of { lease }']);
    const adopt = worker?.adopt ?? [];
    const workerId =
      items[0]?.lease?.workerId ?? adopt[0]?.workerId ?? next?.workerId ?? worker?.workerId ?? '0';
    const o = this.ctx.options;
    const { count, leaseMs } = next
      ? leaseArgs(this.ctx, { ...next, workerId })
      : { count: 0, leaseMs: worker?.leaseMs ?? o.leaseMs };
    const ttl = o.resultTtlMs;
    const keep = o.keepCompleted;
    // Results go when the queue stores them, for a flow child's parent (docs/flows.md), or when
    // the job is kept and has one.
    const flowChild = (it: CompleteItem<R> | undefined) => !!(it?.lease as LeasedJob)?.parent;
    const args: ScriptArgs['complete_and_lease'] = [
      workerId,
      ttl,
      o.dedupeWindowMs,
      count,
      leaseMs,
      worker?.parkMs ?? 0,
      worker?.parkBelow ?? count,
      worker?.sweep ? 1 : 0,
      worker?.byRef ? 1 : 0,
      worker?.ownResends ? 1 : 0,
      keep.count,
      keep.ageMs,
      o.maxLogLines,
      adopt.length,
      items.length,
    ];
    const oneWorker = () => invalid(['completeAndLease takes leases of one worker at a time']);
    for (const lease of adopt) {
      if (lease.workerId !== workerId) throw oneWorker();
      args.push(`${lease.token}:${lease.seq}`);
    }
    // The completed jobs as one argument 'seq token seq token ...' (`completions`), their log
    // lines, then their results when results are stored, or some job is a flow child, or kept
    // and some job has one ('' for
    // a job without: undefined is not kept).
    const done: string[] = [];
    const results: string[] = [];
    let logged = false;
    let withResult = false;
    for (const item of items) {
      const { lease, result, encoded, logs } = (item ?? {}) as CompleteItem<R>;
      this.ctx.checkLease(lease);
      if (lease.workerId !== workerId) throw oneWorker();
      done.push(lease.seq, lease.token);
      if (logs) logged = true;
      if (ttl > 0) results.push(encoded ?? encodeResult(result, o.maxPayloadBytes));
      else if (flowChild(item) || keep.count > 0) {
        // A flow child's goes to its parent ('': none, its parent gets null).
        if (flowChild(item)) withResult = true;
        const r = encoded ?? (result === undefined ? '' : encodeResult(result, o.maxPayloadBytes));
        if (r !== '') withResult = true;
        results.push(r);
      } else results.push('');
    }
    const logs = logged ? packLogs(items.map((it) => ({ seq: it.lease.seq, logs: it.logs }))) : '';
    let units = logs.length;
    for (const r of results) units += r.length;
    if (units > CALL_UNITS && items.length > 1)
      throw invalid([
        `completeAndLease: results and log lines of ${units} UTF-16 units in all, past ${CALL_UNITS} a call (CALL_UNITS): complete them in several calls (a Worker does)`,
      ]);
    if (ttl > 0 || withResult) args.push(done.join(' '), logs, ...results);
    else args.push(done.join(' '), logs);
    const reply = (await this.ctx.run('complete_and_lease', args, {
      workerId,
      buffers: true,
      op: 'complete',
    })) as Reply;
    // { now, deadline, nextDue, drain, paused, flags ('1'|'0' per adopted, completed job), … }
    const flags = str(reply[BATCH_FLAGS]);
    const adopted = new Array<boolean>(adopt.length);
    for (let i = 0; i < adopt.length; i++) adopted[i] = flags.charCodeAt(i) === 49;
    const completed = new Array<boolean>(items.length);
    for (let i = 0, n = adopt.length; i < items.length; i++)
      completed[i] = flags.charCodeAt(n + i) === 49;
    let lostJobs = false;
    if (worker?.byRef && reply.length > BATCH_HEAD) {
      try {
        await readPayloads(this.ctx, reply);
      } catch (e) {
        // The completes and adoptions took place: answer them; the leased jobs are not ours to run.
        this.ctx.options.logger?.warn(`queue ${this.ctx.name}: ${errorMessage(e)}`);
        reply.length = BATCH_HEAD;
        lostJobs = true;
      }
    }
    // Sizes for byRef's choice: a string's length is close enough (no UTF-8 count).
    let payloadBytes = 0;
    for (let i = BATCH_HEAD; i < reply.length; i += 2) {
      const p = reply[i];
      if (p !== null && p !== undefined && typeof p !== 'number') payloadBytes += p.length;
    }
    const batch = (await this.batch(reply, workerId, worker?.keepRaw)) as CompleteReply<T>;
    batch.adopted = adopted;
    batch.completed = completed;
    batch.payloadBytes = payloadBytes;
    batch.lostJobs = lostJobs;
    return batch;
  }

  /** `own`: from a Worker (a re-send of its fail answers what the first did, see fail.lua). */
  async fail(
    lease: Lease,
    error: unknown,
    opts: FailOptions = {},
    logs?: LogBatch,
    own = false,
  ): Promise<FailRecord> {
    this.ctx.checkLease(lease);
    const { mode, delay } = failArgs(this.ctx, lease, error, opts);
    return this.failWith(lease, errorMessage(error), mode, delay, '', logs, own);
  }

  async deadLetter(lease: Lease, reason: string): Promise<FailOutcome> {
    this.ctx.checkLease(lease);
    if (typeof reason !== 'string')
      throw invalid([`deadLetter reason must be a string, got ${shown(reason)}`]);
    // (Kept as long as a failed attempt's error: MAX_ERROR_CHARS.)
    const why = reason.length > MAX_ERROR_CHARS ? reason.slice(0, MAX_ERROR_CHARS) : reason;
    return (await this.failWith(lease, why, 'dead', 0, why)).outcome;
  }

  async release(leases: Lease | readonly Lease[]): Promise<boolean[]> {
    return perWorker(this.ctx, leases, async (workerId, group) => {
      const args: ScriptArgs['release'] = [workerId, group.length];
      for (const l of group) args.push(l.seq, l.token);
      const reply = (await this.ctx.run('release', args, { workerId })) as number[];
      return reply.map((v) => v === 1);
    });
  }

  /**
   * `logs`: per lease, its log lines not sent yet (a renewal carries them). `renewal`: a
   * worker's periodic renewal, which never moves a deadline earlier (a handler's longer
   * `job.extend()` stays); an explicit extend sets now + `ms`.
   */
  async extend(
    leases: Lease | readonly Lease[],
    ms: number,
    logs?: ReadonlyMap<Lease, LogBatch>,
    renewal = false,
  ): Promise<boolean[]> {
    return (await this.extendOrAck(leases, ms, logs, renewal)).map((v) => v === true);
  }

  /**
   * `extend`, answering per lease true (extended), false (lost), or for a lease lost to a cancel
   * the acknowledgement id its canceller waits for (cancel.lua): the holder learnt the cancel here,
   * not from the notice it missed, and acknowledges it.
   */
  async extendOrAck(
    leases: Lease | readonly Lease[],
    ms: number,
    logs?: ReadonlyMap<Lease, LogBatch>,
    renewal = false,
  ): Promise<(boolean | string)[]> {
    if (!isPosInt(ms) || ms > MAX_DELAY_MS)
      throw invalid([`extend ms must be an integer 1..${MAX_DELAY_MS}, got ${shown(ms)}`]);
    const o = this.ctx.options;
    return perWorker(this.ctx, leases, async (workerId, group) => {
      const lines = logs ? packLogs(group.map((l) => ({ seq: l.seq, logs: logs.get(l) }))) : '';
      const args: ScriptArgs['extend_leases'] = [
        workerId,
        ms,
        o.maxLogLines,
        lines,
        renewal ? '1' : '0',
        group.length,
      ];
      for (const l of group) args.push(l.seq, l.token);
      // { deadline, then per job 1 extended | 0 lease lost | its cancel's acknowledgement id }
      const reply = (await this.ctx.run('extend_leases', args, { workerId })) as (
        number | string
      )[];
      const deadline = reply[0] as number;
      return group.map((l, i) => {
        const v = reply[i + 1];
        if (v !== 1) return typeof v === 'string' && v !== '' ? v : false;
        l.deadline = renewal ? Math.max(l.deadline, deadline) : deadline;
        return true;
      });
    });
  }

  async progress(lease: Lease, value: unknown): Promise<boolean> {
    this.ctx.checkLease(lease);
    // (NaN and ±Infinity are refused: JSON would store them as null.)
    if (typeof value === 'number' && !Number.isFinite(value))
      throw invalid([`progress must be a finite number (e.g. 0…1) or a JSON value, got ${value}`]);
    const encoded = encodeProgress(value);
    if (encoded === undefined) throw invalid(['progress must be a JSON value of at most 64 KiB']);
    const { seq, token, workerId } = lease;
    const r = await this.ctx.run('progress', [seq, token, workerId, encoded], { workerId });
    return r === 1;
  }

  /** A decoded lease reply; jobs that cannot run are dead-lettered (and logged) here. */
  private async batch(reply: Reply, workerId: string, keepRaw = false): Promise<LeaseBatch<T>> {
    const unrunnable: Unrunnable[] = [];
    const batch = decodeBatch<T>(this.ctx, reply, workerId, unrunnable, keepRaw);
    if (unrunnable.length === 0) return batch;
    for (const { lease, reason } of unrunnable) {
      await this.deadLetter(lease, reason);
      this.ctx.options.logger?.warn(
        `queue ${this.ctx.name}: job ${lease.id} dead-lettered: ${reason}`,
      );
    }
    return batch;
  }

  private async failWith(
    lease: Lease,
    message: string,
    mode: 'retry' | 'dead',
    delay: number,
    reason: string,
    logs?: LogBatch,
    own = false,
  ): Promise<FailRecord> {
    const o = this.ctx.options;
    const { seq, token, workerId } = lease;
    const args: ScriptArgs['fail'] = [
      seq,
      token,
      workerId,
      message,
      mode,
      delay,
      o.maxAttempts,
      o.maxDead,
      reason,
      o.maxLogLines,
      logs ? packLogs([{ seq, logs }]) : '',
      own ? '1' : '0',
    ];
    // { 1 retried | 2 dead, now } or E_LEASE_LOST
    const r = await this.ctx.run('fail', args, { workerId });
    if (!Array.isArray(r)) return { outcome: 'lost' };
    return { outcome: r[0] === 1 ? 'retried' : 'dead', at: num(r[1] as number) };
  }
}
