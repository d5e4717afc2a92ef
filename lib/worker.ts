import { EventEmitter } from 'node:events';
import { Cluster, type Redis } from 'ioredis';
import { WorkQueueError } from './errors.js';
import { startHeartbeat, type Heartbeat } from './heartbeat.js';
import { errorMessage, type CompleteItem, type WorkQueue } from './queue.js';
import type { FailOutcome, LeasedJob } from './types.js';

/** What a handler receives. */
export interface Job<T = unknown> {
  readonly id: string;
  readonly data: T;
  readonly name: string | undefined;
  readonly priority: number;
  /** 1 for the first run; counts failed attempts. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly queueName: string;
  /** Aborts when the lease is lost, the job is cancelled, times out, or the worker closes. */
  readonly signal: AbortSignal;
  /** Record and publish progress; false when the lease is lost. */
  progress(value: unknown): Promise<boolean>;
  /** Push the lease deadline to now + ms; false when the lease is lost. */
  extend(ms?: number): Promise<boolean>;
}

export type Handler<T, R> = (job: Job<T>) => R | Promise<R>;

export interface WorkerOptions {
  /** Jobs in flight at once. Default 1. */
  concurrency?: number;
  /** Lease length; leases of running jobs are renewed every third of it. Default the queue's. */
  leaseMs?: number;
  /** A handler running longer is aborted and its job failed (an attempt). Default: no limit. */
  jobTimeoutMs?: number;
  /** Longest idle wait before looking again, in case a wake-up was lost. Default 5 000 ms. */
  idleTimeoutMs?: number;
  /** Heartbeat period. Default a quarter of the queue's `heartbeatTimeoutMs`. */
  heartbeatIntervalMs?: number;
  /** Start at construction. Default true; otherwise call `start()`. */
  autostart?: boolean;
  /** Drain timeout used by `close()` when none is given. Default 10 000 ms. */
  closeTimeoutMs?: number;
}

export interface WorkerEvents<T, R> {
  completed: [job: Job<T>, result: R];
  failed: [job: Job<T>, error: unknown, outcome: FailOutcome];
  retried: [job: Job<T>, error: unknown];
  dead: [job: Job<T>, error: unknown];
  leaseLost: [job: Job<T>, reason: string];
  error: [error: unknown];
}

interface Running<T> {
  lease: LeasedJob<T>;
  job: Job<T>;
  controller: AbortController;
  /** Set when the worker stopped caring about this run's outcome (lost, released). */
  settled: boolean;
  done: Promise<void>;
  timer?: NodeJS.Timeout;
}

const CALL_TIMEOUT_MS = 3_000;

/** Resolve `p`, or undefined after `ms` (for shutdown paths that must not hang). */
function within<X>(p: Promise<X>, ms: number): Promise<X | undefined> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise<undefined>((r) => {
      t = setTimeout(() => r(undefined), ms);
    }),
  ]);
}

/**
 * Consumes one queue: keeps up to `concurrency` jobs in flight, leasing in batches and fusing
 * "complete these + lease more" into one round trip; waits on Redis when idle (no polling);
 * renews leases; heartbeats from a thread; closes gracefully.
 */
export class Worker<T = unknown, R = unknown> extends EventEmitter<WorkerEvents<T, R>> {
  readonly concurrency: number;
  readonly leaseMs: number;
  private id = '0';
  private readonly running = new Map<string, Running<T>>();
  private completes: Array<CompleteItem<R> & { run: Running<T> }> = [];
  private flushQueued = false;
  private fetching = false;
  private idle = false;
  private paused = false;
  private closing = false;
  private started: Promise<void> | undefined;
  private closed: Promise<void> | undefined;
  private blocking: Redis | Cluster | undefined;
  private subscriber: Redis | Cluster | undefined;
  private heartbeat: (Heartbeat & { threaded: boolean }) | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = 0;
  private readonly idleTimeoutMs: number;
  private readonly jobTimeoutMs: number | undefined;
  private readonly heartbeatIntervalMs: number;
  private readonly closeTimeoutMs: number;
  private drained: (() => void) | undefined;
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(
    readonly queue: WorkQueue<T, R>,
    private readonly handler: Handler<T, R>,
    options: WorkerOptions = {},
  ) {
    super();
    const problems = workerOptionProblems(options);
    if (problems.length) {
      throw new WorkQueueError(
        'INVALID_OPTIONS',
        `invalid worker options:\n  - ${problems.join('\n  - ')}`,
        problems,
      );
    }
    this.concurrency = options.concurrency ?? 1;
    this.leaseMs = options.leaseMs ?? queue.options.leaseMs;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 5_000;
    this.jobTimeoutMs = options.jobTimeoutMs;
    this.heartbeatIntervalMs =
      options.heartbeatIntervalMs ??
      Math.max(100, Math.floor(queue.options.heartbeatTimeoutMs / 4));
    this.closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
    if (options.autostart ?? true) {
      this.start().catch((e: unknown) => this.report(e));
    }
  }

  /** The worker's id in the queue's registry ('0' before `start()` resolves). */
  get workerId(): string {
    return this.id;
  }

  /** Jobs whose handlers are running now. */
  get activeCount(): number {
    return this.running.size;
  }

  /** Register, open connections, start heartbeat and leasing. Idempotent. */
  start(): Promise<void> {
    this.started ??= this.doStart();
    return this.started;
  }

  private async doStart(): Promise<void> {
    if (this.closing) throw new WorkQueueError('CLOSED', 'worker is closed');
    const q = this.queue;
    await q.ready();
    this.id = await q.registerWorker();
    this.heartbeat = startHeartbeat(
      q.client,
      q.keys.workers,
      this.id,
      this.heartbeatIntervalMs,
      (e) => this.report(e),
    );
    this.blocking = duplicate(q.client);
    this.blocking.on('error', () => {
      /* reconnects by itself; failures surface through the BLPOP call */
    });
    const sub = duplicate(q.client);
    this.subscriber = sub;
    sub.on('error', () => {
      /* reconnects and resubscribes by itself */
    });
    sub.on('message', (_channel: string, message: string) => this.onEvent(message));
    await sub.subscribe(q.keys.events);
    this.renewTimer = setInterval(
      () => void this.renew(),
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    this.renewTimer.unref();
    // close() may have run meanwhile (it waits for start only so long): undo what we opened.
    if (this.closing) await this.releaseConnections();
    else this.scheduleFlush();
  }

  /** Stop timers, the heartbeat and our own connections. Idempotent. */
  private async releaseConnections(): Promise<void> {
    clearInterval(this.renewTimer);
    // Stop beating first, so no late beat registers the worker again.
    await this.heartbeat?.stop();
    const blocking = this.blocking;
    if (blocking && blocking.status !== 'end') blocking.disconnect(false);
    const sub = this.subscriber;
    if (sub && sub.status !== 'end') {
      await within(
        sub.quit().catch(() => undefined),
        1_000,
      );
      if ((sub.status as string) !== 'end') sub.disconnect(false);
    }
  }

  /** Stop taking new jobs (running ones finish). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.scheduleFlush();
  }

  get isPaused(): boolean {
    return this.paused;
  }

  /**
   * Stop leasing, wait for running jobs up to `timeoutMs`, then release the unfinished ones to
   * the front of the queue and abort their signals; deregister and close connections.
   * Always resolves, also when Redis is unreachable. Idempotent.
   */
  close(opts: { timeoutMs?: number } = {}): Promise<void> {
    this.closed ??= this.doClose(opts.timeoutMs ?? this.closeTimeoutMs);
    return this.closed;
  }

  private async doClose(timeoutMs: number): Promise<void> {
    this.closing = true;
    clearTimeout(this.retryTimer);
    // The blocking connection is ours alone: closing it ends an idle BLPOP at once.
    if (this.blocking && this.blocking.status !== 'end') this.blocking.disconnect(false);
    if (this.started)
      await within(
        this.started.catch(() => undefined),
        CALL_TIMEOUT_MS,
      );
    if (this.running.size > 0) {
      const allDone = new Promise<void>((resolve) => {
        this.drained = resolve;
      });
      await within(allDone, timeoutMs);
    }
    // Whatever still runs goes back to the front; its outcome no longer counts.
    const left = [...this.running.values()].filter((r) => !r.settled);
    for (const r of left) this.settle(r, 'worker closing');
    if (left.length > 0) {
      const released = await within(
        this.queue.release(left.map((r) => r.lease)).catch((e: unknown) => this.report(e)),
        CALL_TIMEOUT_MS,
      );
      if (!released)
        this.report(
          new WorkQueueError(
            'REDIS_UNAVAILABLE',
            `close: could not release ${left.length} job(s); clean() will reclaim them`,
          ),
        );
    }
    await within(this.flush(), CALL_TIMEOUT_MS);
    await within(Promise.allSettled([...this.inflight]), CALL_TIMEOUT_MS);
    await this.releaseConnections();
    if (this.id !== '0') {
      await within(
        this.queue.deregisterWorker(this.id).catch((e: unknown) => this.report(e)),
        CALL_TIMEOUT_MS,
      );
    }
  }

  // -------------------------------------------------------------- the loop

  private freeSlots(): number {
    return this.concurrency - this.running.size;
  }

  private scheduleFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      void this.flush();
    });
  }

  /** Send finished jobs' completes and lease into free slots, in one round trip. */
  private async flush(): Promise<void> {
    const items = this.completes;
    const want =
      this.closing || this.paused || this.fetching || this.retryTimer ? 0 : this.freeSlots();
    if (items.length === 0 && want === 0) return;
    this.completes = [];
    if (want > 0) this.fetching = true;
    try {
      const r = await this.track(
        this.queue.completeAndLease(
          items,
          want > 0 ? { count: want, leaseMs: this.leaseMs, workerId: this.id } : undefined,
        ),
      );
      this.retryDelay = 0;
      items.forEach((it, i) => this.afterComplete(it.run, it.result as R, r.completed[i]!));
      for (const lease of r.jobs) this.run(lease);
      if (want > 0) {
        this.fetching = false;
        if (r.jobs.length === 0 && this.freeSlots() > 0) {
          if (!this.idle) void this.waitIdle(r.nextDue, r.now);
        } else if (this.freeSlots() > 0) {
          this.scheduleFlush();
        }
      }
    } catch (e) {
      // Keep the completes (the work is done) and try again shortly.
      this.completes = items.concat(this.completes);
      if (want > 0) this.fetching = false;
      this.report(e);
      this.retryLater();
    }
  }

  private retryLater(): void {
    if (this.closing || this.retryTimer) return;
    this.retryDelay = Math.min(2_000, Math.max(50, this.retryDelay * 2));
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.scheduleFlush();
    }, this.retryDelay);
  }

  /**
   * Block on Redis until a wake-up, the next delayed job, or the idle timeout. Leasing goes on
   * meanwhile when slots free up; this only decides when to look again.
   */
  private async waitIdle(nextDue: number, now: number): Promise<void> {
    const conn = this.blocking;
    if (this.closing || !conn) return;
    this.idle = true;
    let timeout = this.idleTimeoutMs;
    if (nextDue > 0) timeout = Math.max(1, Math.min(timeout, nextDue - now + 1));
    try {
      const answered = await within(
        this.queue.waitForWork(conn, timeout).then(() => true),
        timeout + CALL_TIMEOUT_MS,
      );
      // No answer at all: the connection is half-dead. Reconnect it.
      if (!answered && !this.closing) conn.disconnect(true);
    } catch (e) {
      if (!this.closing) {
        this.report(e);
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      this.idle = false;
    }
    if (!this.closing) this.scheduleFlush();
  }

  /** Keep track of a call that close() must wait for. */
  private track<X>(p: Promise<X>): Promise<X> {
    this.inflight.add(p);
    const forget = () => this.inflight.delete(p);
    p.then(forget, forget);
    return p;
  }

  private run(lease: LeasedJob<T>): void {
    const controller = new AbortController();
    const q = this.queue;
    const job: Job<T> = {
      id: lease.id,
      data: lease.data,
      name: lease.name,
      priority: lease.priority,
      attempt: lease.attempt,
      maxAttempts: lease.maxAttempts,
      queueName: q.name,
      signal: controller.signal,
      progress: async (value) => {
        const ok = await q.progress(lease, value);
        if (!ok) this.lose(lease.seq, 'lease lost');
        return ok;
      },
      extend: async (ms = this.leaseMs) => {
        const [ok] = await q.extend(lease, ms);
        if (!ok) this.lose(lease.seq, 'lease lost');
        return ok!;
      },
    };
    const run: Running<T> = { lease, job, controller, settled: false, done: Promise.resolve() };
    this.running.set(lease.seq, run);
    if (this.jobTimeoutMs !== undefined) {
      run.timer = setTimeout(() => void this.timeOut(run), this.jobTimeoutMs);
    }
    run.done = (async () => {
      let result: R;
      try {
        result = await this.handler(job);
      } catch (error) {
        await this.onFailure(run, error);
        return;
      }
      this.onSuccess(run, result);
    })();
  }

  private onSuccess(run: Running<T>, result: R): void {
    if (run.settled) return;
    if (this.queue.options.resultTtlMs > 0) {
      try {
        JSON.stringify(result ?? null);
      } catch (e) {
        this.report(
          new WorkQueueError(
            'ENCODE_FAILED',
            `job ${run.job.id}: result cannot be encoded, completed without it: ${errorMessage(e)}`,
          ),
        );
        result = undefined as R;
      }
    }
    this.finish(run);
    this.completes.push({ lease: run.lease, result, run });
    this.scheduleFlush();
  }

  private afterComplete(run: Running<T>, result: R, ok: boolean): void {
    if (ok) this.emitSafe('completed', run.job, result);
    else
      this.emitSafe('leaseLost', run.job, 'completed or cancelled elsewhere before this complete');
  }

  private async onFailure(run: Running<T>, error: unknown): Promise<void> {
    if (run.settled) return;
    this.finish(run);
    let outcome: FailOutcome;
    for (let attempt = 0; ; attempt++) {
      try {
        outcome = await this.track(this.queue.fail(run.lease, error));
        break;
      } catch (e) {
        this.report(e);
        if (this.closing || attempt >= 5) return; // The lease expires; clean() puts the job back.
        await new Promise((r) => setTimeout(r, 100 * 2 ** attempt));
      }
    }
    this.emitSafe('failed', run.job, error, outcome);
    if (outcome === 'retried') this.emitSafe('retried', run.job, error);
    else if (outcome === 'dead') this.emitSafe('dead', run.job, error);
    else this.emitSafe('leaseLost', run.job, 'lease lost before fail');
    this.scheduleFlush();
  }

  private async timeOut(run: Running<T>): Promise<void> {
    if (run.settled) return;
    const error = new WorkQueueError(
      'BAD_STATE',
      `job ${run.job.id} timed out after ${this.jobTimeoutMs} ms`,
    );
    run.controller.abort(error);
    await this.onFailure(run, error);
  }

  /** The slot is free: the job left `running` (its outcome is being reported). */
  private finish(run: Running<T>): void {
    run.settled = true;
    clearTimeout(run.timer);
    this.running.delete(run.lease.seq);
    if (this.running.size === 0) this.drained?.();
  }

  /** Forget a run whose outcome no longer matters, aborting its signal. */
  private settle(run: Running<T>, reason: string): void {
    if (run.settled) return;
    this.finish(run);
    run.controller.abort(new WorkQueueError('LEASE_LOST', reason));
  }

  private lose(seq: string, reason: string): void {
    const run = this.running.get(seq);
    if (!run || run.settled) return;
    this.settle(run, reason);
    this.emitSafe('leaseLost', run.job, reason);
    this.scheduleFlush();
  }

  /** Messages on the queue's event channel: `c:<id>` cancelled, `l:<id>` completed elsewhere. */
  private onEvent(message: string): void {
    const kind = message.slice(0, 2);
    const seq = message.slice(2);
    if (kind === 'c:') this.lose(seq, 'job cancelled');
    else if (kind === 'l:') this.lose(seq, 'job completed by another lease holder');
  }

  /** Extend every running job's lease in one call; abort the ones that are lost. */
  private async renew(): Promise<void> {
    const runs = [...this.running.values()].filter((r) => !r.settled);
    if (runs.length === 0) return;
    try {
      const ok = await this.queue.extend(
        runs.map((r) => r.lease),
        this.leaseMs,
      );
      ok.forEach((v, i) => {
        if (!v) this.lose(runs[i]!.lease.seq, 'lease lost (expired and reclaimed)');
      });
    } catch (e) {
      this.report(e);
    }
  }

  private emitSafe<K extends keyof WorkerEvents<T, R>>(
    event: K,
    ...args: WorkerEvents<T, R>[K]
  ): void {
    try {
      (this.emit as (e: K, ...a: WorkerEvents<T, R>[K]) => boolean)(event, ...args);
    } catch (e) {
      if (event !== 'error') this.report(e);
    }
  }

  /** Errors go to 'error' listeners, or to the queue's logger; never thrown. */
  private report(e: unknown): void {
    if (this.listenerCount('error') > 0) this.emitSafe('error', e);
    else
      this.queue.options.logger?.error?.(
        `worker ${this.queue.name}#${this.id}: ${errorMessage(e)}`,
      );
  }
}

/** A new connection with the same options (cluster or not). */
function duplicate(c: Redis | Cluster): Redis | Cluster {
  return c instanceof Cluster ? c.duplicate() : c.duplicate();
}

export function workerOptionProblems(o: WorkerOptions, path = ''): string[] {
  const problems: string[] = [];
  for (const k of [
    'concurrency',
    'leaseMs',
    'jobTimeoutMs',
    'idleTimeoutMs',
    'heartbeatIntervalMs',
  ] as const) {
    const v = o[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)) {
      problems.push(`${path}${k} must be a positive integer, got ${JSON.stringify(v)}`);
    }
  }
  if (
    o.closeTimeoutMs !== undefined &&
    (typeof o.closeTimeoutMs !== 'number' || o.closeTimeoutMs < 0)
  ) {
    problems.push(
      `${path}closeTimeoutMs must be a number >= 0, got ${JSON.stringify(o.closeTimeoutMs)}`,
    );
  }
  if (o.concurrency !== undefined && o.concurrency > 10_000)
    problems.push(`${path}concurrency must be at most 10000`);
  return problems;
}
