/**
 * `WorkQueue`: one queue in one Redis (or one Cluster slot), the public front. Every state change
 * is one Lua script; the work is done by the parts it delegates to (producer, leases, admin,
 * dead letters, repair, schedules, flow control, listings, the worker protocol), which share one
 * `QueueContext`. Its methods are defined in three layers, one file each: producing and holding
 * leases here, administration in queue-admin.ts, construction and the Worker's protocol in
 * queue-base.ts.
 */
import type {
  AddOptions,
  AddResult,
  FailOptions,
  FailOutcome,
  Lease,
  LeasedJob,
  LeaseOptions,
} from '../types/index.js';
import type { LogBatch } from '../job/logs.js';
import { runAddHooks } from './add-hooks.js';
import { BULLMQ_ADD_ORDER } from '../job/add-options.js';
import { type AddHook } from '../types/hooks.js';
import {
  type CompleteItem,
  type CompleteReply,
  type FailRecord,
  type LeaseBatch,
  type WorkerCallOptions,
} from './lease-types.js';

import { QueueAdmin } from './queue-admin.js';
import { errorMessage, invalid } from '../errors.js';
import { decodeResults, readChildren } from './flows/children.js';

/** Whether a lease is of a flow child (its parent awaits its end). */
const isChild = (lease: Lease): boolean => (lease as Partial<LeasedJob>).parent !== undefined;

export class WorkQueue<T = unknown, R = unknown> extends QueueAdmin<T, R> {
  // ---------------------------------------------------------------- producing

  /**
   * Store and enqueue one job. Resolves `{ added: false }` when its caller id exists. Concurrent
   * adds share round trips: those made while one is in flight go together in the next script.
   */
  add(data: T, opts?: AddOptions): Promise<AddResult> {
    // (Not async: no promise more per add than the producer's; a throw still rejects.)
    try {
      // BullMQ's add(name, data, opts): its data would be taken as our options.
      // eslint-disable-next-line prefer-rest-params -- a rest parameter would be public API
      if (arguments.length > 2 && arguments[2] !== undefined)
        throw invalid([BULLMQ_ADD_ORDER], `${this.name}: add refused`);
      const hooks = this.ctx.addHooks;
      if (hooks.length === 0) return this.producer.add(data, opts);
      return runAddHooks(hooks, this.name, 1, async (tc) => [
        await this.producer.add(data, opts, tc),
      ]).then(([res]) => res!);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /**
   * Store and enqueue many jobs in a few round trips (scripts of 2 000 jobs, pipelined).
   * Every job is validated and encoded first: one bad job refuses the batch, nothing written.
   */
  addBulk(jobs: ReadonlyArray<{ data: T; opts?: AddOptions }>): Promise<AddResult[]> {
    const hooks = this.ctx.addHooks;
    if (hooks.length === 0) return this.producer.addBulk(jobs);
    const count = Array.isArray(jobs) ? jobs.length : 0;
    return runAddHooks(hooks, this.name, count, (tc) => this.producer.addBulk(jobs, tc));
  }

  /**
   * Install an add hook (tracing: see nestjs-work-queue/otel) around every later add and
   * addBulk of this queue object. Returns its removal.
   */
  useAddHook(hook: AddHook): () => void {
    this.ctx.addHooks.push(hook);
    return () => {
      const i = this.ctx.addHooks.indexOf(hook);
      if (i >= 0) this.ctx.addHooks.splice(i, 1);
    };
  }

  // ---------------------------------------------------------------- holding leases

  /** Lease up to `count` jobs, highest priority first, FIFO within a priority. */
  async lease(opts: LeaseOptions = {}): Promise<LeasedJob<T>[]> {
    return (await this.leases.leaseBatch(opts)).jobs;
  }

  /**
   * `lease`, also telling when the next delayed job is due (for a worker's wait).
   * @internal The Worker's private protocol (not in the published typings).
   */
  leaseBatch(opts: LeaseOptions = {}): Promise<LeaseBatch<T>> {
    return this.leases.leaseBatch(opts);
  }

  /**
   * Complete one job. True exactly once per job; false when it no longer exists. A flow child's
   * result reaches its parent before this resolves (else clean() delivers it: docs/flows.md).
   */
  async complete(lease: Lease, result?: R): Promise<boolean> {
    const { completed } = await this.leases.completeAndLease([{ lease, result }]);
    if (completed[0] && isChild(lease)) await this.deliverFlowNotices([lease.seq]);
    return completed[0]!;
  }

  /**
   * Complete a batch of jobs of one worker and, in the same round trip, lease up to
   * `next.count` more. A lease that went stale still completes its job if that job (this
   * incarnation) still exists; its new holder then loses it.
   */
  completeAndLease(
    items: ReadonlyArray<CompleteItem<R>>,
    next?: LeaseOptions,
    worker?: WorkerCallOptions,
  ): Promise<CompleteReply<T>> {
    return this.leases.completeAndLease(items, next, worker);
  }

  /**
   * Count a failed attempt: retry after the job's backoff (or `delayMs`) while attempts remain,
   * else dead-letter it with the error. An error with `retryable === false` (e.g.
   * `NonRetryableError`) or `{ retryable: false }` dead-letters at once.
   * Resolves 'lost' when the caller no longer holds the lease (nothing changed).
   */
  async fail(lease: Lease, error: unknown, opts: FailOptions = {}): Promise<FailOutcome> {
    return this.ended(lease, (await this.leases.fail(lease, error, opts)).outcome);
  }

  /**
   * `fail`, with the attempt's log lines, resolving when it was recorded (Redis time).
   * @internal The Worker's private protocol (not in the published typings).
   */
  async failAttempt(
    lease: Lease,
    error: unknown,
    opts: FailOptions,
    logs?: LogBatch,
  ): Promise<FailRecord> {
    const rec = await this.leases.fail(lease, error, opts, logs, true);
    await this.ended(lease, rec.outcome);
    return rec;
  }

  /**
   * `extend`, carrying the log lines of the leases' attempts (a worker's renewal): it never
   * moves a deadline earlier, so a handler's longer `job.extend()` stays. Per lease: true, false
   * (lost), or the acknowledgement id of the cancel it was lost to (see Leases.extendOrAck).
   * @internal The Worker's private protocol (not in the published typings).
   */
  renew(
    leases: readonly Lease[],
    ms: number,
    logs: ReadonlyMap<Lease, LogBatch>,
  ): Promise<(boolean | string)[]> {
    return this.leases.extendOrAck(leases, ms, logs, true);
  }

  /**
   * `job.updateData`: the data of a leased job, fenced by its lease (false: lost).
   * @internal The Worker's private protocol (not in the published typings).
   */
  updateLeasedData(lease: Lease, data: T): Promise<boolean> {
    return this.history.updateLeased(lease, data);
  }

  /**
   * A handler's `DelayedError`: the job waits until `delay` (ms from now, or a Date), no attempt
   * counted. Resolves its due time, or undefined when the lease was lost.
   * @internal The Worker's private protocol (not in the published typings).
   */
  moveToDelayed(lease: Lease, delay: number | Date, logs?: LogBatch): Promise<number | undefined> {
    return this.history.moveToDelayed(lease, delay, logs);
  }

  /** Dead-letter a leased job at once with a reason (undecodable payload, no handler, ...). */
  async deadLetter(lease: Lease, reason: string): Promise<FailOutcome> {
    return this.ended(lease, await this.leases.deadLetter(lease, reason));
  }

  /** A dead flow child: its parent learns it now (else clean() tells it: docs/flows.md). */
  private async ended(lease: Lease, outcome: FailOutcome): Promise<FailOutcome> {
    if (outcome === 'dead' && isChild(lease)) await this.deliverFlowNotices([lease.seq]);
    return outcome;
  }

  // ---------------------------------------------------------------- flows

  /**
   * The results of flow parent `id`'s completed children, by child key `<queue>:<id>` (kept
   * until the parent ends). NOT_FOUND when no job has this id.
   */
  async getChildrenResults<C = unknown>(id: string): Promise<Record<string, C>> {
    return decodeResults(await this.children(id, 'r')) as Record<string, C>;
  }

  /**
   * The errors of flow parent `id`'s failed children by child key: ignored ones, and the one that
   * failed it (a parent retried from the dead-letter set sees it); not removed ones.
   */
  getChildrenFailures(id: string): Promise<Record<string, string>> {
    return this.children(id, 'f');
  }

  private async children(id: string, kind: 'r' | 'f'): Promise<Record<string, string>> {
    this.ctx.checkId(id);
    const flat = (await this.ctx.run('flow_children', [id, kind])) as string[];
    const out: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
    return out;
  }

  /**
   * Deliver the notices flow children `seqs` wrote when they ended (docs/internals/flows.md);
   * failures are logged and left for clean().
   * @internal The Worker's private protocol (not in the published typings).
   */
  async deliverFlowNotices(seqs: readonly string[]): Promise<void> {
    try {
      await this.flows.deliver(this.name, seqs);
    } catch (e) {
      this.options.logger?.warn(
        `queue ${this.name}: flow notices left for clean() to deliver: ${errorMessage(e)}`,
      );
    }
  }

  /**
   * What the children of parent `seq` (a job of this queue) left it.
   * @internal The Worker's private protocol (not in the published typings).
   */
  childrenOf(seq: string, kind: 'results' | 'failures'): Promise<Record<string, unknown>> {
    return readChildren(this.flowRunner, this.name, seq, kind);
  }

  /** Give jobs back to the FRONT of their priority without counting an attempt. */
  release(leases: Lease | readonly Lease[]): Promise<boolean[]> {
    return this.leases.release(leases);
  }

  /** Push lease deadlines to now + `ms` (Redis time); false for each lease that is lost. */
  extend(leases: Lease | readonly Lease[], ms = this.options.leaseMs): Promise<boolean[]> {
    return this.leases.extend(leases, ms);
  }

  /** Record and publish progress (a number 0…1 or a small JSON value). False when the lease is lost. */
  progress(lease: Lease, value: unknown): Promise<boolean> {
    return this.leases.progress(lease, value);
  }
}
