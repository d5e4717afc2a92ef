/**
 * `WorkQueue`: one queue in one Redis (or one Cluster slot), the public front. Every state change
 * is one Lua script; the work is done by the parts this front delegates to (producer, leases,
 * admin, dead letters, repair, the worker protocol), which share one `QueueContext`.
 */
import type { Cluster, Redis } from 'ioredis';
import type { QueueKeys } from '../keys.js';
import type { ResolvedQueueOptions } from '../options.js';
import { infos, summarize, type RedisInfo } from '../redis/info.js';
import type {
  AddOptions,
  AddResult,
  CleanReport,
  DeadJob,
  FailOutcome,
  JobInfo,
  Lease,
  LeasedJob,
  LeaseOptions,
  QueueCounts,
  RepairReport,
  WorkQueueOptions,
} from '../types.js';
import { redisError } from '../errors.js';
import { Admin } from './admin.js';
import { CancelAcks } from './cancel-acks.js';
import { QueueContext } from './context.js';
import { DeadLetters } from './dead-letters.js';
import {
  Leases,
  type CompleteItem,
  type CompleteReply,
  type LeaseBatch,
  type WorkerCallOptions,
} from './leases.js';
import { Producer } from './producer.js';
import { repair } from './repair.js';
import { ResultWaiter, type WaitForResultOptions } from '../events/results.js';
import { WorkerProtocol } from './worker-protocol.js';

export class WorkQueue<T = unknown, R = unknown> {
  readonly options: ResolvedQueueOptions;
  readonly keys: QueueKeys;
  private readonly ctx: QueueContext;
  private readonly cancelAcks: CancelAcks;
  private readonly producer: Producer;
  private readonly leases: Leases<T, R>;
  private readonly admin: Admin<T, R>;
  private readonly dead: DeadLetters<T>;
  private readonly workers: WorkerProtocol<T>;
  private readonly results: ResultWaiter<T, R>;

  constructor(
    readonly client: Redis | Cluster,
    readonly name: string,
    options: WorkQueueOptions = {},
  ) {
    this.ctx = new QueueContext(client, name, options);
    this.options = this.ctx.options;
    this.keys = this.ctx.keys;
    this.cancelAcks = new CancelAcks(client, this.keys, this.options.commandTimeoutMs);
    this.producer = new Producer(this.ctx);
    this.leases = new Leases(this.ctx);
    this.admin = new Admin(this.ctx, this.cancelAcks);
    this.dead = new DeadLetters(this.ctx);
    this.workers = new WorkerProtocol(this.ctx);
    this.results = new ResultWaiter(this.ctx, (id) => this.admin.getJob(id));
  }

  /**
   * Close the connections this queue opened itself (one that waits for cancel acknowledgements,
   * opened on demand), and the event reader of waitForResult. The client given to the
   * constructor is the caller's: never closed here.
   */
  async close(): Promise<void> {
    await Promise.all([this.cancelAcks.close(), this.results.close()]);
  }

  /** Checks Redis once (version >= 6.2; warns when eviction can drop jobs). */
  ready(): Promise<void> {
    return this.ctx.ready();
  }

  // ---------------------------------------------------------------- producing

  /** Store and enqueue one job. Resolves `{ added: false }` when its caller id exists. */
  async add(data: T, opts: AddOptions = {}): Promise<AddResult> {
    const [res] = await this.producer.addBulk([{ data, opts }]);
    return res!;
  }

  /**
   * Store and enqueue many jobs in a few round trips (scripts of 2 000 jobs, pipelined).
   * Every job is validated and encoded first: one bad job refuses the batch, nothing written.
   */
  addBulk(jobs: ReadonlyArray<{ data: T; opts?: AddOptions }>): Promise<AddResult[]> {
    return this.producer.addBulk(jobs);
  }

  // ---------------------------------------------------------------- holding leases

  /** Lease up to `count` jobs, highest priority first, FIFO within a priority. */
  async lease(opts: LeaseOptions = {}): Promise<LeasedJob<T>[]> {
    return (await this.leases.leaseBatch(opts)).jobs;
  }

  /** `lease`, also telling when the next delayed job is due (for a worker's wait). */
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
   * Count a failed attempt: retry after the job's backoff while attempts remain, else
   * dead-letter it with the error. An error with `retryable === false` (e.g.
   * `NonRetryableError`) or `{ retryable: false }` dead-letters at once.
   * Resolves 'lost' when the caller no longer holds the lease (nothing changed).
   */
  fail(lease: Lease, error: unknown, opts: { retryable?: boolean } = {}): Promise<FailOutcome> {
    return this.leases.fail(lease, error, opts);
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

  // ---------------------------------------------------------------- managing

  /**
   * The job stops existing wherever it is. When a live worker holds it (running, prefetched or
   * handed off), cancel resolves once that worker has acknowledged that it will never start the
   * job (its signal aborts if it runs), or after `commandTimeoutMs` when it does not answer.
   */
  cancel(id: string): Promise<boolean> {
    return this.admin.cancel(id);
  }

  getJob(id: string): Promise<JobInfo<T, R> | null> {
    return this.admin.getJob(id);
  }

  /**
   * Wait for job `id` to finish, whether it already has or not: resolves with its result
   * (`undefined` unless `storeResults` keeps results), rejects with a JobOutcomeError when it is
   * dead (code JOB_DEAD, with the reason) or cancelled (JOB_CANCELLED), NOT_FOUND when no such
   * job exists (a finished job is known only while its result or caller id is kept), TIMEOUT
   * after `timeoutMs` (default 30 000), ABORTED when `signal` fires. Needs the event log (the
   * `events` option); a failed attempt that will be retried is not an outcome.
   */
  waitForResult(id: string, opts: WaitForResultOptions = {}): Promise<R | undefined> {
    return this.results.wait(id, opts);
  }

  /** A completed job's stored result (when `storeResults` is on and it has not expired). */
  async getResult(id: string): Promise<R | undefined> {
    const info = await this.admin.getJob(id);
    return info?.state === 'completed' ? info.result : undefined;
  }

  counts(): Promise<QueueCounts> {
    return this.admin.counts();
  }

  /**
   * Reclaim expired leases (to the front, counting a lease expiry), reclaim the leases of
   * workers whose heartbeat lapsed, promote due delayed jobs, drop expired results.
   * Cost is proportional to the work found.
   */
  clean(): Promise<CleanReport> {
    return this.admin.clean();
  }

  /**
   * `clean()`, at most once per `intervalMs` across every process that calls this (workers and
   * the Nest cleaner do, every interval): the first to set the queue's guard key cleans. The
   * guard lives slightly less than the interval, so the one that cleaned last is not locked out
   * of its own next round. Resolves the report, or undefined when another cleaned this round.
   */
  async cleanIfDue(intervalMs: number, owner: string): Promise<CleanReport | undefined> {
    return (await this.admin.takeCleanGuard(intervalMs, owner)) ? this.clean() : undefined;
  }

  /**
   * Deep check: walk the queue incrementally for jobs that break an invariant, and fix each
   * one atomically. Finds nothing in normal operation.
   */
  async repair(): Promise<RepairReport> {
    await this.ctx.ready();
    try {
      return await repair(this.ctx);
    } catch (e) {
      throw redisError(`queue ${this.name}: repair`, e);
    }
  }

  /**
   * The eviction policy and version, for health checks. On a Cluster, of every master: the
   * lowest version, and the first policy other than `noeviction` if any master has one.
   */
  async redisInfo(): Promise<RedisInfo> {
    return summarize(await infos(this.client));
  }

  // ---------------------------------------------------------------- dead letters

  /** A page of the dead-letter set, oldest first. */
  listDead(opts: { offset?: number; limit?: number } = {}): Promise<DeadJob<T>[]> {
    return this.dead.list(opts);
  }

  /** Requeue a dead job (to the back of its priority), attempts reset. False when not dead. */
  retryDead(id: string): Promise<boolean> {
    return this.dead.retry(id);
  }

  /** Purge one dead job, or (no id) the whole dead-letter set. Resolves how many were purged. */
  purgeDead(id?: string): Promise<number> {
    return this.dead.purge(id);
  }

  // ---------------------------------------------------------------- the Worker's protocol

  /** Register a worker (its heartbeat starts now, from Redis time). Resolves its id. */
  registerWorker(): Promise<string> {
    return this.workers.register();
  }

  heartbeat(workerId: string): Promise<void> {
    return this.workers.beat(workerId);
  }

  /** Forget a worker that released or finished its jobs. */
  deregisterWorker(workerId: string): Promise<void> {
    return this.workers.leave(workerId);
  }

  /** Stop handing jobs off to a worker (it pauses); one waiting for it goes back in line. */
  unparkWorker(workerId: string): Promise<void> {
    return this.workers.unpark(workerId);
  }

  /**
   * After a dropped connection: give back at once every job Redis says the worker holds but the
   * worker does not know of (`known`: tokens of its running, buffered and handed-off jobs).
   * Resolves how many leases and hand-offs went back.
   */
  reconcile(
    workerId: string,
    known: readonly string[],
  ): Promise<{ leases: number; handoffs: number }> {
    return this.workers.reconcile(workerId, known);
  }

  /**
   * Block on `blockingClient` (a connection used for nothing else) until work may be available
   * or `timeoutMs` passes (docs/hand-off.md). Resolves true when woken, a job when one was
   * handed off to this (parked) worker — adopt it with `completeAndLease([], …, { adopt,
   * sweep })` — and false on timeout. After an entry was taken, the next call must sweep.
   */
  waitForWork(
    blockingClient: Redis | Cluster,
    timeoutMs: number,
    workerId: string,
  ): Promise<boolean | LeasedJob<T>> {
    return this.workers.waitForWork(blockingClient, timeoutMs, workerId);
  }
}
