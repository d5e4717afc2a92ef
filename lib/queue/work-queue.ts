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
import { type AddHook } from '../types/hooks.js';
import {
  type CompleteItem,
  type CompleteReply,
  type FailRecord,
  type LeaseBatch,
  type WorkerCallOptions,
} from './leases.js';

import { QueueAdmin } from './queue-admin.js';

export class WorkQueue<T = unknown, R = unknown> extends QueueAdmin<T, R> {
  // ---------------------------------------------------------------- producing

  /**
   * Store and enqueue one job. Resolves `{ added: false }` when its caller id exists. Concurrent
   * adds share round trips: those made while one is in flight go together in the next script.
   */
  async add(data: T, opts: AddOptions = {}): Promise<AddResult> {
    const hooks = this.ctx.addHooks;
    if (hooks.length === 0) return this.producer.add(data, opts);
    const [res] = await runAddHooks(hooks, this.name, 1, async (tc) => [
      await this.producer.add(data, opts, tc),
    ]);
    return res!;
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

  /** Complete one job. True exactly once per job; false when it no longer exists. */
  async complete(lease: Lease, result?: R): Promise<boolean> {
    const { completed } = await this.leases.completeAndLease([{ lease, result }]);
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
    return (await this.leases.fail(lease, error, opts)).outcome;
  }

  /**
   * `fail`, with the attempt's log lines, resolving when it was recorded (Redis time).
   * @internal The Worker's private protocol (not in the published typings).
   */
  failAttempt(
    lease: Lease,
    error: unknown,
    opts: FailOptions,
    logs?: LogBatch,
  ): Promise<FailRecord> {
    return this.leases.fail(lease, error, opts, logs);
  }

  /**
   * `extend`, carrying the log lines of the leases' attempts (a worker's renewal).
   * @internal The Worker's private protocol (not in the published typings).
   */
  renew(
    leases: readonly Lease[],
    ms: number,
    logs: ReadonlyMap<Lease, LogBatch>,
  ): Promise<boolean[]> {
    return this.leases.extend(leases, ms, logs);
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
  deadLetter(lease: Lease, reason: string): Promise<FailOutcome> {
    return this.leases.deadLetter(lease, reason);
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
