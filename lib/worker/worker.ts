// The public Worker: options, start/pause/resume/close and events. A thin front: the work is
// done by the parts it wires together (run table, runner, lease loop, idle wait, hand-offs…).
import { EventEmitter } from 'node:events';
import { errorMessage, invalid, WorkQueueError } from '../errors.js';
import type { RunHook } from '../types/hooks.js';
import type { WorkQueue } from '../queue/index.js';
import { within } from '../util/timeout.js';
import { CleanRounds } from './clean-rounds.js';
import { abandonStart, closeWorker } from './close.js';
import { Cancels } from './cancels.js';
import { WorkerContext } from './context.js';
import { EventsChannel } from './events-channel.js';
import { Handoffs } from './handoffs.js';
import type { Heartbeat } from './heartbeat-api.js';
import { joinHeartbeat } from './heartbeat.js';
import { IdleWait } from './idle-wait.js';
import type { Handler, WorkerEvents } from '../types/worker.js';
import { LeaseLoop } from './lease-loop.js';
import type { WorkerLiveness } from './liveness.js';
import { LeaseRenewer } from './lease-renewer.js';
import { QueuePause } from './queue-pause.js';
import { closeOptionProblems, resolveWorkerOptions, type WorkerOptions } from './options.js';
import { RunTable } from './run-table.js';
import { Runner } from './runner.js';
import { SandboxPool } from '../sandbox/pool.js';
import { StartWaits, type WorkerStartWait } from './start-waits.js';
import { untilAnswered } from './start-retry.js';
import type { SandboxOptions } from '../types/sandbox.js';

export type { Handler, WorkerEvents } from '../types/worker.js';
export type { Job } from '../types/job.js';
export { workerOptionProblems, type BackoffStrategy, type WorkerOptions } from './options.js';

/**
 * Consumes one queue: keeps up to `concurrency` jobs in flight, leasing in batches and fusing
 * "complete these + lease more" into one round trip; waits on Redis when idle (no polling);
 * renews leases; heartbeats from a thread; closes gracefully.
 */
export class Worker<T = unknown, R = unknown> extends EventEmitter<WorkerEvents<T, R>> {
  readonly concurrency: number;
  readonly leaseMs: number;
  private readonly ctx: WorkerContext<T, R>;
  private started: Promise<void> | undefined;
  /** Started at construction: its start keeps trying while Redis does not answer. */
  private persistent = false;
  /** What an unfinished start() waits for (see `startWaits`). */
  private readonly waits = new StartWaits();
  private closed: Promise<void> | undefined;
  private startRelease: Promise<void> | undefined; // a failed start's: not waited for by start()
  private readonly events: EventsChannel<T, R>;
  private heartbeat: Heartbeat | undefined;
  private readonly cleans: CleanRounds<T, R>;
  /** The handler's sandboxes, when it is `{ file, mode }` (docs/sandboxes.md). */
  private readonly sandbox: SandboxPool<T, R> | undefined;
  private readonly onClientClose = () => void (this.ctx.loop.needReconcile = true);
  private readonly onClientReady = () => {
    if (!this.ctx.loop.needReconcile) return;
    this.heartbeat?.reconnected();
    this.ctx.loop.schedule();
  };

  constructor(
    readonly queue: WorkQueue<T, R>,
    handler: Handler<T, R> | SandboxOptions,
    options: WorkerOptions = {},
  ) {
    super();
    const settings = resolveWorkerOptions(queue, options, handler);
    this.concurrency = settings.concurrency;
    this.leaseMs = settings.leaseMs;
    if (typeof handler !== 'function')
      this.sandbox = new SandboxPool(
        handler,
        settings.concurrency,
        (e) => this.report(e),
        () => this.ctx.renewer.startable(),
      );
    const ctx = new WorkerContext<T, R>(
      queue,
      this.sandbox?.handler ?? (handler as Handler<T, R>),
      settings,
      // (Bound, not an arrow passing its arguments on: an array fewer per event, per job.)
      this.emitSafe.bind(this),
      (e) => this.report(e),
    );
    ctx.runs = new RunTable(ctx);
    ctx.runner = new Runner(ctx);
    ctx.loop = new LeaseLoop(ctx);
    ctx.idle = new IdleWait(ctx);
    ctx.handoffs = new Handoffs(ctx);
    ctx.cancels = new Cancels(ctx);
    ctx.renewer = new LeaseRenewer(ctx);
    ctx.queuePause = new QueuePause(ctx);
    this.ctx = ctx;
    this.events = new EventsChannel(ctx);
    this.cleans = new CleanRounds(ctx);
    if (options.autostart ?? true) {
      this.persistent = true;
      this.start().catch((e: unknown) => this.report(e));
    }
  }

  /** The worker's id in the queue's registry ('0' before `start()` resolves). */
  get workerId(): string {
    return this.ctx.id;
  }

  /** A hook around every later handler call (tracing, metrics: /otel, /metrics); its removal. */
  useRunHook(hook: RunHook): () => void {
    const hooks = this.ctx.runHooks;
    hooks.push(hook);
    return () => {
      const i = hooks.indexOf(hook);
      if (i >= 0) hooks.splice(i, 1);
    };
  }

  /** Jobs whose handlers are running now. */
  get activeCount(): number {
    return this.ctx.runs.active;
  }

  /** Jobs held leased ahead of free slots now (see the `prefetch` option). */
  get prefetch(): number {
    return this.ctx.loop.prefetch;
  }

  /**
   * @internal For liveness probes (nestjs-work-queue/health's `isAlive()`): whether Redis answers
   * the lease loop and the heartbeat beats from a thread (liveness.ts).
   */
  get liveness(): WorkerLiveness {
    const { ctx, heartbeat } = this;
    return {
      paused: ctx.closing || ctx.holding,
      unansweredMs: ctx.progress.unansweredMs(),
      heartbeat: heartbeat?.source() ?? 'main thread',
      heartbeatLostMs: heartbeat?.lostMs() ?? 0,
    };
  }

  /**
   * @internal What an unfinished `start()` waits for now (empty before it and once started):
   * a start that times out says which step was slow (src/work-queue.registrar.ts).
   */
  get startWaits(): readonly WorkerStartWait[] {
    return this.waits.list();
  }

  /** Register, open connections, start heartbeat and leasing. Idempotent. */
  start(): Promise<void> {
    this.started ??= this.doStart();
    return this.started;
  }

  private async doStart(): Promise<void> {
    try {
      await this.startSteps();
    } finally {
      this.waits.clear();
    }
  }

  private async startSteps(): Promise<void> {
    const { ctx, queue: q } = this;
    if (ctx.closing) throw new WorkQueueError('CLOSED', 'worker is closed');
    // Join the process's heartbeat thread (it starts, if none runs, with our first lease call:
    // see heartbeat.ts). Our event subscription connects while we check Redis and register, and
    // is not waited for before the first lease (nor is the blocking one, opened at the first wait).
    const heartbeat = joinHeartbeat(q, ctx.settings.heartbeatIntervalMs, (e) => this.report(e));
    this.heartbeat = heartbeat;
    const subscribed = this.events.open();
    subscribed.catch(() => undefined); // a start that fails closes it
    let grace: number;
    try {
      // An autostart keeps trying while Redis does not answer (start-retry.ts).
      const keep = this.persistent ? ctx : undefined;
      // A sandboxed handler's module is loaded meanwhile: one that cannot run fails the start.
      await Promise.all([
        this.waits.on(
          'redis check',
          untilAnswered(() => q.ready(), keep),
        ),
        this.sandbox && this.waits.on('sandbox', this.sandbox.start()),
      ]);
      if (ctx.closing) return await this.releaseConnections(); // close() gave up: not registered
      // The registration is the first bridge beat too (one round trip: heartbeat.ts).
      grace = heartbeat.registrationGraceMs;
      const { concurrency, name } = ctx.settings;
      const info = { concurrency, token: ctx.registration, ...(name ? { name } : {}) };
      ctx.id = await this.waits.on(
        'registration',
        untilAnswered(() => q.registerWorker(info, grace), keep),
      );
    } catch (e) {
      this.startRelease = this.releaseConnections(); // (its notice connection's QUIT: ≤ 1 s)
      throw e;
    }
    // The thread beats from now on (the main thread too until then, covering its start-up).
    const covered = heartbeat.begin(ctx.id, grace > 0);
    // One pair of listeners per worker on a client that many workers may share.
    q.client.setMaxListeners(q.client.getMaxListeners() + 1);
    q.client.on('close', this.onClientClose);
    q.client.on('ready', this.onClientReady);
    // Lease once the first bridge beat landed (the registration itself, or, without a thread,
    // no bridge), not after the thread's first beat: heartbeat.ts says why that is safe.
    await this.waits.on('first heartbeat', within(covered, q.options.heartbeatTimeoutMs));
    ctx.renewer.start();
    this.cleans.start();
    // close() may have run meanwhile (it waits for start only so long): undo what we opened.
    if (ctx.closing) return abandonStart(ctx, () => this.releaseConnections());
    ctx.started = true;
    ctx.loop.schedule();
    // The thread boots (CPU-heavy: a V8 isolate) once the first lease call is on its way (same
    // turn of the event loop, before any reply can start a handler).
    setImmediate(() => heartbeat.boot());
    void subscribed.then(
      () => this.events.catchUp(),
      () => undefined, // closed meanwhile
    );
  }

  /** Stop timers, the heartbeat, our own connections and sandboxes (waited for unless told not). */
  private async releaseConnections(waitSandboxes = true): Promise<void> {
    await this.startRelease; // (close() after a failed start waits for its release)
    const sandboxes = this.sandbox?.close();
    this.ctx.renewer.stop();
    this.ctx.queuePause.stop();
    this.cleans.stop();
    const c = this.queue.client;
    if (c.listeners('close').includes(this.onClientClose)) {
      c.off('close', this.onClientClose);
      c.off('ready', this.onClientReady);
      c.setMaxListeners(Math.max(10, c.getMaxListeners() - 1));
    }
    // Stop beating first, so no late beat registers the worker again.
    await this.heartbeat?.stop();
    this.ctx.idle.disconnect();
    await this.events.close();
    if (waitSandboxes) await sandboxes;
  }

  /** Stop taking new jobs (running ones finish). */
  pause(): void {
    this.ctx.paused = true;
    // Unparked first, as in close(): a hand-off waiting goes back behind what we release (FIFO).
    this.ctx.idle.unpark();
    void this.ctx.runs.release();
  }

  resume(): void {
    if (!this.ctx.paused) return;
    this.ctx.paused = false;
    this.ctx.loop.schedule();
  }

  get isPaused(): boolean {
    return this.ctx.paused;
  }

  /**
   * Stop leasing, wait for running jobs up to `timeoutMs`, then release the unfinished ones to
   * the front of the queue and abort their signals; deregister and close connections.
   * Always resolves, also when Redis is unreachable. Idempotent. A `timeoutMs` not of 0..2^31-1
   * ms (Infinity: a timer would fire at once) rejects INVALID_ARGUMENT and closes nothing.
   */
  close(opts: { timeoutMs?: number } = {}): Promise<void> {
    const problems = closeOptionProblems(opts);
    if (problems.length > 0) return Promise.reject(invalid(problems, 'close refused'));
    const { timeoutMs } = opts;
    this.closed ??= closeWorker(this.ctx, {
      timeoutMs: timeoutMs ?? this.ctx.settings.closeTimeoutMs,
      started: this.started,
      releaseConnections: () => this.releaseConnections(false),
      sandboxesClosed: () => this.sandbox?.close(),
    });
    return this.closed;
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

  /** Errors go to 'error' listeners, or to the queue's logger (its warn without error); never thrown. */
  private report(e: unknown): void {
    if (this.ctx.closed) return;
    if (this.listenerCount('error') > 0) return void this.emitSafe('error', e);
    const logger = this.queue.options.logger;
    const message = `worker ${this.queue.name}#${this.ctx.id}: ${errorMessage(e)}`;
    if (logger?.error) logger.error(message);
    else logger?.warn(message);
  }
}
