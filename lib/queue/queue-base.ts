/**
 * The base of `WorkQueue`: what a queue is made of (its context and the parts the public methods
 * delegate to), its lifecycle, and the Worker's private protocol. See work-queue.ts.
 */
import type { Cluster, Redis } from 'ioredis';
import type { QueueKeys } from '../redis/queue-keys.js';
import type { ResolvedQueueOptions } from '../options.js';
import { redisError } from '../errors.js';
import { bounded } from '../redis/bounded.js';
import { infos, summarize, type RedisInfo } from '../redis/info.js';
import type { LeasedJob, WorkQueueOptions } from '../types/index.js';
import { Schedules } from './schedules.js';
import { Admin } from './admin.js';
import { CancelAcks } from './cancel-acks.js';
import { QueueContext } from './context.js';
import { DeadLetters } from './dead-letters.js';
import { Flow } from './flow-control.js';
import { History } from './history.js';
import { Groups } from './groups.js';
import { Leases } from './leases.js';
import { Listings } from './listings.js';
import { Producer } from './producer.js';
import { WorkerProtocol } from './worker-protocol.js';
import { ResultWaiter } from './results.js';
import { FlowDelivery } from './flows/delivery.js';
import { FlowRunner } from './flows/runner.js';

export class QueueBase<T = unknown, R = unknown> {
  readonly options: ResolvedQueueOptions;
  readonly keys: QueueKeys;
  protected readonly ctx: QueueContext;
  protected readonly cancelAcks: CancelAcks;
  protected readonly producer: Producer;
  protected readonly leases: Leases<T, R>;
  protected readonly admin: Admin<T, R>;
  protected readonly dead: DeadLetters<T>;
  protected readonly workers: WorkerProtocol<T>;
  protected readonly schedules: Schedules<T>;
  protected readonly flow: Flow;
  protected readonly groups: Groups;
  protected readonly listings: Listings<T, R>;
  protected readonly results: ResultWaiter<T, R>;
  protected readonly history: History<T>;
  /** Flow notices and cancels of this queue's jobs, delivered to other queues (docs/flows.md). */
  protected readonly flows: FlowDelivery;
  protected readonly flowRunner: FlowRunner;

  constructor(
    readonly client: Redis | Cluster,
    readonly name: string,
    options: WorkQueueOptions = {},
  ) {
    this.ctx = new QueueContext(client, name, options);
    this.options = this.ctx.options;
    this.keys = this.ctx.keys;
    this.cancelAcks = new CancelAcks(client, this.keys, this.options.commandTimeoutMs);
    this.flowRunner = new FlowRunner(client, this.options, () => this.ctx.ready());
    this.flows = new FlowDelivery(this.flowRunner);
    this.producer = new Producer(this.ctx);
    this.leases = new Leases(this.ctx);
    this.schedules = new Schedules<T>(this.ctx);
    this.admin = new Admin(this.ctx, this.cancelAcks, this.flows, this.schedules);
    this.dead = new DeadLetters(this.ctx);
    this.workers = new WorkerProtocol(this.ctx);
    this.flow = new Flow(this.ctx);
    this.groups = new Groups(this.ctx, this.flows);
    this.listings = new Listings(this.ctx, this.flows);
    this.results = new ResultWaiter(this.ctx, (id) => this.admin.getJob(id));
    this.history = new History<T>(this.ctx);
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

  /**
   * The eviction policy and version, for health checks. On a Cluster, of every master: the
   * lowest version, and the first policy other than `noeviction` if any master has one.
   */
  async redisInfo(): Promise<RedisInfo> {
    // Bounded as every operation is: a health check built on it must not hang on a dead Redis.
    const context = `queue ${this.ctx.name}: redisInfo`;
    try {
      return summarize(
        await bounded(this.client, this.ctx.options.commandTimeoutMs, context, () =>
          infos(this.client, this.ctx.options.commandTimeoutMs),
        ),
      );
    } catch (e) {
      throw redisError(context, e);
    }
  }

  // ---------------------------------------------------------------- the Worker's protocol

  /**
   * Register a worker (its heartbeat starts now, from Redis time). Resolves its id. `info`: what
   * `getWorkers()` shows of it besides its host and process. `graceMs`: its first beat counts
   * that much into the future (a Worker's start-up bridge beat, lib/worker/heartbeat.ts).
   * @internal The Worker's private protocol (not in the published typings).
   */
  registerWorker(
    info: { name?: string; concurrency?: number; token?: string } = {},
    graceMs?: number,
  ): Promise<string> {
    const { token = '', ...shown } = info;
    return this.workers.register(History.registration(shown), graceMs, token);
  }

  /** @internal The Worker's private protocol (not in the published typings). */
  heartbeat(workerId: string): Promise<void> {
    return this.workers.beat(workerId);
  }

  /**
   * Forget a worker that released or finished its jobs.
   * @internal The Worker's private protocol (not in the published typings).
   */
  deregisterWorker(workerId: string, registration?: string): Promise<void> {
    return this.workers.leave(workerId, registration);
  }

  /**
   * Stop handing jobs off to a worker (it pauses); one waiting for it goes back in line.
   * @internal The Worker's private protocol (not in the published typings).
   */
  unparkWorker(workerId: string): Promise<void> {
    return this.workers.unpark(workerId);
  }

  /**
   * After a dropped connection: give back at once every job Redis says the worker holds but the
   * worker does not know of (`known`: tokens of its running, buffered and handed-off jobs).
   * Resolves how many leases and hand-offs went back.
  
   * @internal The Worker's private protocol (not in the published typings).
   */
  reconcile(
    workerId: string,
    known: readonly string[],
  ): Promise<{ leases: number; handoffs: number }> {
    return this.workers.reconcile(workerId, known);
  }

  /**
   * The queue's pause version now, 0 when not paused (a worker that may have missed a pause).
   * @internal The Worker's private protocol (not in the published typings).
   */
  pauseVersion(): Promise<number> {
    return this.workers.pauseVersion();
  }

  /**
   * Which of `groups` are paused now (a worker that may have missed group-pause notices).
   * @internal The Worker's private protocol (not in the published typings).
   */
  pausedGroups(groups: readonly string[]): Promise<Set<string>> {
    return this.workers.pausedGroups(groups);
  }

  /**
   * Block on `blockingClient` (a connection used for nothing else) until work may be available
   * or `timeoutMs` passes (docs/internals/hand-off.md). Resolves true when woken, a job when one was
   * handed off to this (parked) worker — adopt it with `completeAndLease([], …, { adopt,
   * sweep })` — and false on timeout. After an entry was taken, the next call must sweep.
  
   * @internal The Worker's private protocol (not in the published typings).
   */
  waitForWork(
    blockingClient: Redis | Cluster,
    timeoutMs: number,
    workerId: string,
  ): Promise<boolean | LeasedJob<T>> {
    return this.workers.waitForWork(blockingClient, timeoutMs, workerId);
  }
}
