import { EventEmitter } from 'node:events';
import type { Cluster, Redis } from 'ioredis';
import { within } from './util/timeout.js';
import { duplicate } from './connection.js';
import { errorMessage, invalidOptions, WorkQueueError } from './errors.js';
import { startHeartbeat, type Heartbeat } from './worker/heartbeat.js';
import { type CompleteItem, type WorkQueue } from './queue.js';
import { defaultCleanInterval } from './options.js';
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
  /**
   * Jobs leased ahead of free slots, so the next one starts without waiting for a round trip.
   * Their leases run (and are renewed) while they wait; `pause()` and `close()` give them back.
   * Default 'auto': as many as the worker finishes in one round trip to Redis (measured: the
   * average round trip of its calls × concurrency / the average handler time), at least 1 and at
   * most 32 — so 1 for jobs that take longer than a round trip (a buffered job waits at most
   * about one job), more for jobs much shorter than one. A number pins it; 0 turns it off.
   */
  prefetch?: number | 'auto';
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
  /**
   * Run the queue's `clean()` this often (at most once per interval across all workers and
   * processes: a guard key in Redis), so that a crashed worker's jobs come back within seconds
   * without a cleaner of your own. Default a quarter of the queue's heartbeat timeout (500 ms
   * with defaults); 0 turns it off (the Nest module runs its own cleaner instead).
   */
  cleanIntervalMs?: number;
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
  /** Created when the handler first reads `job.signal` (most never do). */
  controller?: AbortController;
  abortReason?: unknown;
  /** Set when the worker stopped caring about this run's outcome (lost, released). */
  settled: boolean;
  done: Promise<void>;
  timer?: NodeJS.Timeout;
}

const CALL_TIMEOUT_MS = 3_000;
/** Most jobs one lease call may ask for (`lease({ count })`'s maximum). */
const MAX_LEASE_COUNT = 10_000;
/** How long a cancel acknowledgement key lives (the canceller waits commandTimeoutMs at most). */
const CANCEL_ACK_TTL_MS = 60_000;
/** How long a cancelled token is remembered (a lease reply or hand-off later than this is not). */
const CANCEL_MEMORY_MS = 60_000;
/** A parked worker counts as parked this much longer than its longest idle wait. */
const PARK_MARGIN_MS = 1_000;
/** Most jobs 'auto' prefetch holds ahead (for jobs far shorter than a round trip). */
const AUTO_PREFETCH_MAX = 32;
/** Weight of the newest sample in the running averages of 'auto' prefetch. */
const AVERAGE_WEIGHT = 0.1;
const average = (avg: number, sample: number) =>
  Number.isFinite(avg) ? avg + (sample - avg) * AVERAGE_WEIGHT : sample;

interface Deferred<X> {
  promise: Promise<X>;
  resolve(value: X): void;
}

function deferred<X>(): Deferred<X> {
  let resolve!: (value: X) => void;
  const promise = new Promise<X>((r) => (resolve = r));
  return { promise, resolve };
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
  /**
   * Runs in flight, by lease token (unique per lease). Not by job: a job whose lease was
   * reclaimed can be leased again by this same worker while its stale run still goes on.
   */
  private readonly running = new Map<string, Running<T>>();
  /** The live run of each job, by job number (a newer lease of the job replaces it). */
  private readonly bySeq = new Map<string, Running<T>>();
  /** Prefetched jobs waiting for a slot. */
  private buffer: LeasedJob<T>[] = [];
  /** Jobs asked for by lease calls still in flight. */
  private requested = 0;
  /** The `prefetch` option as given ('auto' unless pinned). */
  private readonly prefetchOption: number | 'auto';
  /** Averages for 'auto' prefetch (ms, exponentially weighted): handler run, lease call. */
  private jobMs = Number.POSITIVE_INFINITY;
  private callMs = 0;
  private completes: Array<CompleteItem<R> & { run: Running<T> }> = [];
  /** Jobs handed off to this worker (popped from the wake list), to adopt in the next flush. */
  private adopting: LeasedJob<T>[] = [];
  /**
   * Handed-off jobs not adopted yet, by token, each with what its adoption will say (they are
   * not renewed, and their handlers' extend/progress wait: the lease is not ours yet).
   */
  private readonly unadopted = new Map<string, Deferred<boolean>>();
  /** Tokens of handed-off jobs that came while pausing or closing: released once adopted. */
  private readonly late = new Set<string>();
  /** The idle wait took entries into the hand-off list since the last call: sweep it. */
  private sweep = false;
  /** Tokens of jobs cancelled while this worker held or might receive them: never started. */
  private readonly cancelled = new Map<string, number>();
  /** Tokens of hand-offs that reached us (recently), to acknowledge their cancels. */
  private readonly handsSeen = new Map<string, number>();
  /** Acknowledgements owed for cancelled hand-offs that have not reached us yet, by token. */
  private readonly pendingAcks = new Map<string, string>();
  /** A suspect job waits to run alone: lease nothing until nothing is held (see lease_jobs). */
  private draining = false;
  /** The token of the suspect job we run alone, if any. */
  private soloToken: string | undefined;
  /** Redis may hold jobs for us that we do not know of (a reply was lost): reconcile first. */
  private needReconcile = false;
  private reconciling = false;
  private readonly onClientClose = () => {
    this.needReconcile = true;
  };
  private readonly onClientReady = () => {
    if (this.needReconcile) this.scheduleFlush();
  };
  private flushQueued = false;
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
  private dueTimer: NodeJS.Timeout | undefined;
  private dueAt = 0;
  private retryDelay = 0;
  private readonly idleTimeoutMs: number;
  private readonly jobTimeoutMs: number | undefined;
  private readonly heartbeatIntervalMs: number;
  private readonly closeTimeoutMs: number;
  private readonly cleanIntervalMs: number;
  private cleanTimer: NodeJS.Timeout | undefined;
  private cleaning = false;
  private drained: (() => void) | undefined;
  /** Ends the current idle wait (see waitIdle). */
  private stopIdle: (() => void) | undefined;
  /** Ends the current idle wait when its connection drops (see waitIdle). */
  private idleLost: (() => void) | undefined;
  /** Settles when the current idle wait's BLPOP has answered (or failed). */
  private idleSettled: Promise<unknown> | undefined;
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(
    readonly queue: WorkQueue<T, R>,
    private readonly handler: Handler<T, R>,
    options: WorkerOptions = {},
  ) {
    super();
    const problems = workerOptionProblems(options);
    if (problems.length) {
      throw invalidOptions('invalid worker options', problems);
    }
    this.concurrency = options.concurrency ?? 1;
    this.prefetchOption = options.prefetch ?? 'auto';
    this.leaseMs = options.leaseMs ?? queue.options.leaseMs;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 5_000;
    this.jobTimeoutMs = options.jobTimeoutMs;
    this.heartbeatIntervalMs =
      options.heartbeatIntervalMs ??
      Math.max(100, Math.floor(queue.options.heartbeatTimeoutMs / 4));
    this.closeTimeoutMs = options.closeTimeoutMs ?? 10_000;
    this.cleanIntervalMs = options.cleanIntervalMs ?? defaultCleanInterval([queue]);
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
      q.options.heartbeatTimeoutMs,
      (e) => this.report(e),
    );
    // A wait whose reply is lost must not be sent again: it could take a second entry while the
    // first sits unknown in our hand-off list (reconcile gives such entries back).
    this.blocking = duplicate(q.client, { autoResendUnfulfilledCommands: false });
    this.blocking.on('error', () => {
      /* reconnects by itself; a wait it drops ends through 'close' */
    });
    this.blocking.on('close', () => this.idleLost?.());
    // One pair of listeners per worker on a client that many workers may share.
    q.client.setMaxListeners(q.client.getMaxListeners() + 1);
    q.client.on('close', this.onClientClose);
    q.client.on('ready', this.onClientReady);
    const sub = duplicate(q.client);
    this.subscriber = sub;
    sub.on('error', () => {
      /* reconnects and resubscribes by itself */
    });
    sub.on('message', (_channel: string, message: string) => this.onEvent(message));
    await sub.subscribe(q.keys.events);
    // Lease only once the heartbeat thread beats (bounded): a handler blocking the event loop
    // before that would also stop the main thread's bridge beats, and the worker would look dead.
    await within(this.heartbeat.firstBeat, q.options.heartbeatTimeoutMs);
    this.renewTimer = setInterval(
      () => void this.renew(),
      Math.max(50, Math.floor(this.leaseMs / 3)),
    );
    this.renewTimer.unref();
    if (this.cleanIntervalMs > 0) {
      this.cleanTimer = setInterval(() => void this.cleanRound(), this.cleanIntervalMs);
      this.cleanTimer.unref();
    }
    // close() may have run meanwhile (it waits for start only so long): undo what we opened.
    if (this.closing) await this.releaseConnections();
    else this.scheduleFlush();
  }

  /** Stop timers, the heartbeat and our own connections. Idempotent. */
  private async releaseConnections(): Promise<void> {
    clearInterval(this.renewTimer);
    clearInterval(this.cleanTimer);
    const c = this.queue.client;
    if (c.listeners('close').includes(this.onClientClose)) {
      c.off('close', this.onClientClose);
      c.off('ready', this.onClientReady);
      c.setMaxListeners(Math.max(10, c.getMaxListeners() - 1));
    }
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

  /** One round of the queue's clean, unless another worker (or process) cleaned this round. */
  private async cleanRound(): Promise<void> {
    if (this.cleaning || this.closing) return;
    this.cleaning = true;
    try {
      await this.queue.cleanIfDue(this.cleanIntervalMs, `worker:${this.id}`);
    } catch (e) {
      this.report(e);
    } finally {
      this.cleaning = false;
    }
  }

  /** Stop taking new jobs (running ones finish). */
  pause(): void {
    this.paused = true;
    void this.releaseBuffer();
    if (this.id !== '0')
      void this.track(this.queue.unparkWorker(this.id)).catch((e: unknown) => this.report(e));
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
    clearTimeout(this.dueTimer);
    // No more hand-offs to us (one waiting for us goes back in line, ahead of what we release
    // later, which was leased before it); prefetched jobs go back at once, so other workers can
    // take them while we drain.
    if (this.id !== '0')
      void this.track(this.queue.unparkWorker(this.id)).catch((e: unknown) => this.report(e));
    void this.releaseBuffer();
    // The blocking connection is ours alone: closing it ends an idle BLMOVE at once. An entry it
    // took whose reply is lost stays in our hand-off list, and leaving gives it back.
    const waiting = this.idle && this.blocking?.status === 'ready';
    if (this.blocking && this.blocking.status !== 'end') this.blocking.disconnect(false);
    this.stopIdle?.();
    // A reply on its way is still read (a hand-off it carries is then adopted and released).
    if (waiting && this.idleSettled) await within(this.idleSettled, 1_000);
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
    // The Redis calls below share one budget: with Redis unreachable each would otherwise wait
    // out its own timeout (several seconds in all); this way close() resolves about
    // CALL_TIMEOUT_MS after the drain. Connections (heartbeat first) are released meanwhile.
    const end = Date.now() + CALL_TIMEOUT_MS;
    const budget = () => Math.max(0, end - Date.now());
    const connectionsReleased = this.releaseConnections();
    // Adopt hand-offs first (with the last completes): only then are they ours to release.
    await within(this.flush(), budget());
    if (left.length > 0) {
      const owned = await within(Promise.all(left.map((r) => this.adopted(r.lease))), budget());
      const leases = left.filter((_, i) => owned?.[i] === true).map((r) => r.lease);
      const released = await within(
        this.queue.release(leases).catch((e: unknown) => this.report(e)),
        budget(),
      );
      if (!released)
        this.report(
          new WorkQueueError(
            'REDIS_UNAVAILABLE',
            `close: could not release ${left.length} job(s); clean() will reclaim them`,
          ),
        );
    }
    await within(this.flush(), budget());
    await within(Promise.allSettled([...this.inflight]), budget());
    // Hand-offs the closing flush could not adopt are not ours: their lease lapses.
    for (const d of this.unadopted.values()) d.resolve(false);
    // The heartbeat has stopped before the worker leaves, so no late beat registers it again.
    await connectionsReleased;
    if (this.id !== '0') {
      await within(
        this.queue.deregisterWorker(this.id).catch((e: unknown) => this.report(e)),
        budget(),
      );
    }
  }

  // -------------------------------------------------------------- the loop

  /** Jobs held leased ahead of free slots now (see the `prefetch` option). */
  get prefetch(): number {
    if (this.prefetchOption !== 'auto') return this.prefetchOption;
    const ahead = Math.ceil((this.concurrency * this.callMs) / this.jobMs);
    return Math.min(AUTO_PREFETCH_MAX, Math.max(1, Number.isFinite(ahead) ? ahead : 1));
  }

  /** Jobs to ask for now: free slots plus prefetch, less what is held or on its way. */
  private freeSlots(): number {
    return (
      this.concurrency + this.prefetch - this.running.size - this.buffer.length - this.requested
    );
  }

  /** Start leased jobs while slots are free; keep the rest in the prefetch buffer. */
  private place(jobs: LeasedJob<T>[]): void {
    for (const lease of jobs) {
      // Cancelled while its lease reply was on the way: never started (cancel.lua).
      if (this.cancelled.size > 0 && this.cancelled.has(lease.token)) continue;
      if (lease.token.charCodeAt(0) === 115 /* 's' */) this.soloToken = lease.token;
      this.buffer.push(lease);
    }
    while (this.buffer.length > 0 && this.running.size < this.concurrency && !this.paused) {
      this.run(this.buffer.shift()!);
    }
    if (this.paused) this.releaseBuffer();
  }

  /** Give prefetched jobs back to the front of the queue (pause, close). */
  private releaseBuffer(): Promise<unknown> {
    // A handed-off job not adopted yet is released once it is (see afterAdopt).
    for (const l of this.buffer) if (this.unadopted.has(l.token)) this.late.add(l.token);
    const leases = this.buffer.filter((l) => !this.unadopted.has(l.token));
    this.buffer = [];
    if (leases.length === 0) return Promise.resolve();
    return this.track(this.queue.release(leases)).catch((e: unknown) => this.report(e));
  }

  private scheduleFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      void this.flush();
    });
  }

  /**
   * Send finished jobs' completes and lease into free slots, in one round trip. Several may be in
   * flight at once (a pipeline): each asks only for slots nobody asked for yet.
   */
  private async flush(): Promise<void> {
    if (this.needReconcile && !this.closing) await this.reconcile();
    if (this.reconciling) return;
    const items = this.completes;
    const adopt = this.adopting;
    const sweep = this.sweep;
    const want =
      this.closing || this.paused || this.retryTimer || this.holdingBack()
        ? 0
        : Math.min(MAX_LEASE_COUNT, Math.max(0, this.freeSlots()));
    if (items.length === 0 && want === 0 && adopt.length === 0 && !sweep) return;
    this.completes = [];
    this.adopting = [];
    this.sweep = false;
    this.requested += want;
    const sentAt = performance.now();
    try {
      const r = await this.track(
        this.queue.completeAndLease(
          items,
          want > 0 ? { count: want, leaseMs: this.leaseMs, workerId: this.id } : undefined,
          { parkMs: this.idleTimeoutMs + PARK_MARGIN_MS, adopt, sweep, leaseMs: this.leaseMs },
        ),
      );
      this.requested -= want;
      this.retryDelay = 0;
      if (want > 0) this.callMs = average(this.callMs, performance.now() - sentAt);
      if (r.drain) this.draining = true;
      r.adopted.forEach((ok, i) => this.afterAdopt(adopt[i]!, ok));
      items.forEach((it, i) => this.afterComplete(it.run, it.result as R, r.completed[i]!));
      if (this.closing) {
        // Too late to start them: straight back to the front.
        this.buffer.push(...r.jobs);
        void this.releaseBuffer();
        return;
      }
      this.place(r.jobs);
      if (want > 0 && this.freeSlots() > 0 && !r.drain) {
        if (r.jobs.length < want && this.requested === 0) {
          // The queue ran dry: wait on Redis for more. Already waiting: the wait may end later
          // than the next delayed job is due (its wake-up can race this lease), so look again then.
          if (!this.idle) void this.waitIdle(r.nextDue, r.now);
          else if (r.nextDue > 0) this.lookAgainAt(r.nextDue - r.now + 1);
        } else if (r.jobs.length === want) {
          this.scheduleFlush();
        }
      }
    } catch (e) {
      // Keep the completes (the work is done) and adoptions, and try again shortly. Unanswered,
      // the call may still have run: what it leased is ours without our knowing (reconcile).
      this.requested -= want;
      this.completes = items.concat(this.completes);
      this.adopting = adopt.concat(this.adopting);
      this.sweep ||= sweep;
      if (!(e instanceof WorkQueueError) || e.code === 'REDIS_UNAVAILABLE') {
        this.needReconcile = true;
      }
      this.report(e);
      this.retryLater();
    }
  }

  /**
   * Lease nothing while a suspect job waits for us to finish what we hold (`draining`), or while
   * we hold a suspect's solo run: it must run alone (see lease_jobs).
   */
  private holdingBack(): boolean {
    if (this.draining) {
      if (this.running.size + this.buffer.length + this.requested > 0) return true;
      this.draining = false;
    }
    const solo = this.soloToken;
    if (solo === undefined) return false;
    if (this.running.has(solo) || this.buffer.some((l) => l.token === solo)) return true;
    this.soloToken = undefined;
    return false;
  }

  /**
   * After a dropped connection or an unanswered call: give back at once what Redis says we hold
   * but we do not know of (a lease whose reply was lost, an entry our cut wait took), instead of
   * leaving it until its lease lapses. Runs with nothing else in flight that could lease.
   */
  private async reconcile(): Promise<void> {
    if (this.reconciling || this.id === '0' || this.queue.client.status !== 'ready') return;
    this.reconciling = true;
    try {
      await within(Promise.allSettled([...this.inflight]), this.queue.options.commandTimeoutMs);
      if (this.idle && this.blocking && this.blocking.status !== 'end') {
        this.blocking.disconnect(true); // ends the wait; it reconnects by itself
      }
      if (this.idleSettled) await within(this.idleSettled, CALL_TIMEOUT_MS);
      this.needReconcile = false;
      const known = [
        ...this.running.keys(),
        ...this.buffer.map((l) => l.token),
        ...this.unadopted.keys(),
      ];
      await this.track(this.queue.reconcile(this.id, known));
    } catch (e) {
      this.needReconcile = true;
      this.report(e);
      this.retryLater();
    } finally {
      this.reconciling = false;
    }
    this.scheduleFlush();
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
    // close() ends the wait at once: with Redis down, disconnecting does not settle a BLPOP
    // that waits to be resent, and its timer would outlive the worker by up to the timeout.
    const stopped = new Promise<false>((resolve) => {
      this.stopIdle = () => resolve(false);
    });
    // The connection dropped: its wait is never answered nor sent again (no re-sending on this
    // connection), and it may have taken an entry we never saw.
    const dropped = new Promise<false>((resolve) => {
      this.idleLost = () => {
        this.needReconcile = true;
        resolve(false);
      };
    });
    const answer = this.queue.waitForWork(conn, timeout, this.id).then(
      (got) => {
        if (got !== false) this.sweep = true;
        if (typeof got === 'object') this.receiveHandoff(got);
        return true;
      },
      (e: unknown) => {
        // The wait's reply is lost: it may have taken an entry we never saw.
        this.needReconcile = true;
        throw e;
      },
    );
    this.idleSettled = Promise.race([answer.catch(() => undefined), dropped]);
    try {
      const answered = await within(
        Promise.race([answer, stopped, dropped]),
        timeout + CALL_TIMEOUT_MS,
      );
      // No answer at all: the connection is half-dead. Reconnect it.
      if (answered === undefined && !this.closing) {
        this.needReconcile = true;
        conn.disconnect(true);
      }
    } catch (e) {
      if (!this.closing) {
        this.report(e);
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      this.idle = false;
      this.stopIdle = undefined;
      this.idleLost = undefined;
    }
    if (!this.closing) this.scheduleFlush();
  }

  /**
   * A job an add handed off to this parked worker: start it now, and adopt its lease in the
   * next flush (with the job's complete, when the handler is that quick); when pausing or
   * closing, adopt it only to release it. Adopting after the handler started keeps the round
   * trip out of the latency; the hand-off lease is as long as a lease (see add.lua), so a
   * handler that blocks the event loop first loses it no sooner than a regular lease.
   */
  private receiveHandoff(job: LeasedJob<T>): void {
    if (this.cancelled.has(job.token)) {
      // Cancelled before it reached us: never started (the sweep drops its entry).
      const ack = this.pendingAcks.get(job.token);
      if (ack !== undefined) {
        this.pendingAcks.delete(job.token);
        this.acknowledge(ack);
      }
      this.scheduleFlush();
      return;
    }
    this.handsSeen.set(job.token, Date.now());
    this.forgetOldCancels();
    this.adopting.push(job);
    this.unadopted.set(job.token, deferred<boolean>());
    if (this.paused || this.closing) this.late.add(job.token);
    else this.place([job]);
    this.scheduleFlush();
  }

  private afterAdopt(lease: LeasedJob<T>, ok: boolean): void {
    this.unadopted.get(lease.token)?.resolve(ok);
    this.unadopted.delete(lease.token);
    const late = this.late.delete(lease.token);
    if (!ok) {
      // Cancelled, or its hand-off lease lapsed and the job went back: not ours to finish.
      const run = this.running.get(lease.token);
      if (run) this.lose(run, 'hand-off lost before adoption (cancelled or reclaimed)');
      this.buffer = this.buffer.filter((l) => l.token !== lease.token);
    } else if (late) {
      this.buffer.push(lease);
      void this.releaseBuffer();
    }
  }

  /** Resolves true at once for a lease that is ours; for a hand-off, once adopted (or not). */
  private adopted(lease: LeasedJob<T>): Promise<boolean> | boolean {
    return this.unadopted.get(lease.token)?.promise ?? true;
  }

  /** Lease again in `ms` (the earliest such request wins). */
  private lookAgainAt(ms: number): void {
    const at = Date.now() + Math.max(1, ms);
    if (this.dueTimer && this.dueAt <= at) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at;
    this.dueTimer = setTimeout(() => {
      this.dueTimer = undefined;
      this.scheduleFlush();
    }, at - Date.now());
    this.dueTimer.unref();
  }

  /** Keep track of a call that close() must wait for. */
  private track<X>(p: Promise<X>): Promise<X> {
    this.inflight.add(p);
    const forget = () => this.inflight.delete(p);
    p.then(forget, forget);
    return p;
  }

  private run(lease: LeasedJob<T>): void {
    const q = this.queue;
    const job: Job<T> = {
      id: lease.id,
      data: lease.data,
      name: lease.name,
      priority: lease.priority,
      attempt: lease.attempt,
      maxAttempts: lease.maxAttempts,
      queueName: q.name,
      get signal(): AbortSignal {
        if (!run.controller) {
          run.controller = new AbortController();
          if (run.abortReason !== undefined) run.controller.abort(run.abortReason);
        }
        return run.controller.signal;
      },
      progress: async (value) => {
        // A handed-off job's lease is ours only once adopted.
        const ok = (await this.adopted(lease)) && (await q.progress(lease, value));
        if (!ok) this.lose(run, 'lease lost');
        return ok;
      },
      extend: async (ms = this.leaseMs) => {
        const ok = (await this.adopted(lease)) && (await q.extend(lease, ms))[0]!;
        if (!ok) this.lose(run, 'lease lost');
        return ok;
      },
    };
    const run: Running<T> = { lease, job, settled: false, done: Promise.resolve() };
    // A run of the same job still here holds a lease that was reclaimed (this one replaced it).
    const stale = this.bySeq.get(lease.seq);
    if (stale) this.lose(stale, 'lease lost (expired and reclaimed)');
    this.bySeq.set(lease.seq, run);
    this.running.set(lease.token, run);
    if (this.jobTimeoutMs !== undefined) {
      run.timer = setTimeout(() => void this.timeOut(run), this.jobTimeoutMs);
    }
    run.done = (async () => {
      let result: R;
      const startedAt = performance.now();
      try {
        result = await this.handler(job);
      } catch (error) {
        this.jobMs = average(this.jobMs, performance.now() - startedAt);
        await this.onFailure(run, error);
        return;
      }
      this.jobMs = average(this.jobMs, performance.now() - startedAt);
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
    let outcome: FailOutcome = 'lost';
    // A handed-off job's lease is ours only once adopted (the next flush, already scheduled).
    const owned = await this.adopted(run.lease);
    for (let attempt = 0; owned; attempt++) {
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
    this.abort(run, error);
    await this.onFailure(run, error);
  }

  /** The slot is free: the job left `running` (its outcome is being reported). */
  private finish(run: Running<T>): void {
    run.settled = true;
    clearTimeout(run.timer);
    this.running.delete(run.lease.token);
    if (this.bySeq.get(run.lease.seq) === run) this.bySeq.delete(run.lease.seq);
    if (!this.closing && !this.paused && this.buffer.length > 0) this.run(this.buffer.shift()!);
    if (this.running.size === 0) this.drained?.();
  }

  /** Forget a run whose outcome no longer matters, aborting its signal. */
  private settle(run: Running<T>, reason: string): void {
    if (run.settled) return;
    this.finish(run);
    this.abort(run, new WorkQueueError('LEASE_LOST', reason));
  }

  private abort(run: Running<T>, reason: unknown): void {
    if (run.controller) run.controller.abort(reason);
    else run.abortReason ??= reason;
  }

  private lose(run: Running<T>, reason: string): void {
    if (run.settled) return;
    this.settle(run, reason);
    this.emitSafe('leaseLost', run.job, reason);
    this.scheduleFlush();
  }

  /**
   * Messages on the queue's event channel: `l:<n>` completed by another lease holder, and
   * `c:<n>:<token>:<holder>:<ack>` cancelled (see cancel.lua). A cancelled job we hold (or that
   * is handed off to parked workers, holder 'h') is never started from now on: dropped from the
   * buffer, aborted if running, remembered by token in case its lease reply or hand-off is still
   * on the way. Then we acknowledge, so that the canceller's `cancel()` resolves.
   */
  private onEvent(message: string): void {
    if (message.startsWith('l:')) {
      const run = this.bySeq.get(message.slice(2));
      if (run) this.lose(run, 'job completed by another lease holder');
      return;
    }
    if (!message.startsWith('c:')) return;
    const [, seq = '', token = '', holder = '', ack = ''] = message.split(':');
    const mine = holder === this.id;
    if (!mine && holder !== 'h') return;
    const got =
      this.handsSeen.has(token) ||
      this.running.has(token) ||
      this.buffer.some((l) => l.token === token);
    this.cancelled.set(token, Date.now());
    this.forgetOldCancels();
    const run = this.bySeq.get(seq);
    if (run && run.lease.token === token) this.lose(run, 'job cancelled');
    this.buffer = this.buffer.filter((l) => l.token !== token);
    // A hand-off is acknowledged by the worker that got it (whoever popped it); one of ours, at
    // once: from now on we never start it.
    if (mine || got) this.acknowledge(ack);
    else if (holder === 'h') this.pendingAcks.set(token, ack);
  }

  /** Tell the canceller that a cancelled job will never start here (see lib/cancel-acks.ts). */
  private acknowledge(ack: string): void {
    if (!ack) return;
    const q = this.queue;
    const c = q.client;
    void this.track(
      Promise.all([
        c.set(q.keys.cancelAck(ack), '1', 'PX', CANCEL_ACK_TTL_MS),
        c.publish(q.keys.cancelAcks, ack),
      ]),
    ).catch((e: unknown) => this.report(e));
  }

  /** Cancel records older than a lease reply or hand-off can be late are dropped. */
  private forgetOldCancels(): void {
    const old = Date.now() - CANCEL_MEMORY_MS;
    for (const map of [this.cancelled, this.handsSeen]) {
      if (map.size < 1_000) continue;
      for (const [token, at] of map) {
        if (at >= old) break;
        map.delete(token);
        this.pendingAcks.delete(token);
      }
    }
  }

  /** Extend every running job's lease in one call; abort the ones that are lost. */
  private async renew(): Promise<void> {
    const runs = [...this.running.values()].filter(
      (r) => !r.settled && !this.unadopted.has(r.lease.token),
    );
    const waiting = this.buffer.filter((l) => !this.unadopted.has(l.token));
    if (runs.length + waiting.length === 0) return;
    try {
      const ok = await this.queue.extend([...runs.map((r) => r.lease), ...waiting], this.leaseMs);
      ok.forEach((v, i) => {
        if (v) return;
        if (i < runs.length) this.lose(runs[i]!, 'lease lost (expired and reclaimed)');
        else this.buffer = this.buffer.filter((l) => l !== waiting[i - runs.length]);
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
    o.cleanIntervalMs !== undefined &&
    (typeof o.cleanIntervalMs !== 'number' ||
      !Number.isInteger(o.cleanIntervalMs) ||
      o.cleanIntervalMs < 0)
  ) {
    problems.push(
      `${path}cleanIntervalMs must be an integer >= 0, got ${JSON.stringify(o.cleanIntervalMs)}`,
    );
  }
  if (
    o.closeTimeoutMs !== undefined &&
    (typeof o.closeTimeoutMs !== 'number' || o.closeTimeoutMs < 0)
  ) {
    problems.push(
      `${path}closeTimeoutMs must be a number >= 0, got ${JSON.stringify(o.closeTimeoutMs)}`,
    );
  }
  if (
    o.prefetch !== undefined &&
    o.prefetch !== 'auto' &&
    (typeof o.prefetch !== 'number' ||
      !Number.isInteger(o.prefetch) ||
      o.prefetch < 0 ||
      o.prefetch > 10_000)
  ) {
    problems.push(
      `${path}prefetch must be 'auto' or an integer 0..10000, got ${JSON.stringify(o.prefetch)}`,
    );
  }
  if (o.concurrency !== undefined && o.concurrency > 10_000)
    problems.push(`${path}concurrency must be at most 10000`);
  return problems;
}
