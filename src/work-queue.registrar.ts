// Runs the @Processor() classes: one Worker per queue. Internal (see WorkQueueRegistrar).
import { closeOnDestroy, forgetCloser } from './utils/close-on-destroy.util.js';
import {
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import {
  errorMessage,
  invalidOptions,
  NonRetryableError,
  within,
  Worker,
  WorkQueueError,
  type Handler,
  type WorkQueue,
} from '../lib/internal.js';
import { workerQueueProblems } from './utils/validate-options.util.js';
import { byProcessor, insideSandbox, processorSandbox } from './sandbox/sandbox-options.js';
import { WORK_QUEUE_MODULE_DEFAULTS } from './work-queue.constants.js';
import { WorkQueueContext } from './work-queue.context.js';
import { WorkQueueEventsExplorer } from './work-queue-events.explorer.js';
import { WorkQueueExplorer, type QueueProcessor } from './work-queue.explorer.js';
import { WorkerEventHooks } from './work-queue.worker-events.js';
import {
  CANNOT_START,
  CANNOT_START_PROCESSORS,
  forRootTwice,
  INVALID_MODULE_OPTIONS,
  jobDead,
  jobRetrying,
  leaseLost,
  NO_SHUTDOWN_HOOKS,
  noHandler,
  workerError,
  workerNotStarted,
  workerSandboxStartTimeout,
  workerStarted,
  workerStartTimeout,
} from './work-queue.messages.js';

/**
 * Runs the processors the explorer found: one worker per queue. Collects in `onModuleInit`
 * (bad processors fail the bootstrap, also those whose worker this instance does not run),
 * starts in `onApplicationBootstrap` the workers the `workers` options allow (the bootstrap
 * waits until each is registered and leasing), drains them all when Nest destroys the first
 * processor (closeOnDestroy), at the latest in `beforeApplicationShutdown`: running jobs get
 * `shutdownTimeoutMs` to finish, then are released to the front of their queue.
 */
/** How long after bootstrap shutdown hooks may still be enabled before the module warns. */
const SHUTDOWN_HOOKS_GRACE_MS = 1_000;

@Injectable()
export class WorkQueueRegistrar
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown
{
  private processors: QueueProcessor[] = [];
  /** The `@OnWorkerEvent()` methods of each queue's processors. */
  private readonly hooks = new Map<string, WorkerEventHooks>();
  private closing: Promise<void> | undefined;
  /** Processor instances given our onModuleDestroy (closeOnDestroy), with their closers. */
  private readonly closers: Array<[object, () => Promise<unknown>]> = [];
  /** The shutdown-hooks check, when none were found at bootstrap (see warnIfNoShutdownHooks). */
  private hooksCheck: NodeJS.Timeout | undefined;

  constructor(
    private readonly explorer: WorkQueueExplorer,
    private readonly context: WorkQueueContext,
    private readonly events: WorkQueueEventsExplorer,
    private readonly discovery: DiscoveryService,
  ) {
    context.onBootstrapFailure(() => this.stop());
  }

  onModuleInit(): void {
    if (insideSandbox()) return; // a processor's sandbox (src/sandbox/host.ts) runs no workers
    try {
      this.check();
    } catch (e) {
      this.context.bootstrapFailed();
      throw e;
    }
  }

  /** Every problem of the set-up in one error: the module's, the processors', the event hooks'. */
  private check(): void {
    const refused: WorkQueueError[] = [];
    const checked = <X>(f: () => X): X | undefined => {
      try {
        return f();
      } catch (e) {
        if (!(e instanceof WorkQueueError && e.code === 'INVALID_OPTIONS')) throw e;
        refused.push(e);
        return undefined;
      }
    };
    checked(() => {
      // (An alias, useExisting, is the same context: once.)
      const roots = new Set(
        this.discovery
          .getProviders()
          .flatMap((w) =>
            !w.isAlias && w.instance instanceof WorkQueueContext ? [w.instance] : [],
          ),
      );
      // forRoot() called twice: two contexts, each with queues and workers of its own, and a
      // queue injected from one that the other's processors cannot find.
      if (roots.size > 1)
        throw invalidOptions(INVALID_MODULE_OPTIONS, [
          forRootTwice([...roots].map((c) => c.prefix)),
        ]);
    });
    // Every queue is registered by now (the queue providers are created before any hook runs).
    const names = this.context.queues.map((q) => q.name);
    const problems = workerQueueProblems(this.context.workersOption, names);
    if (problems.length > 0) refused.push(invalidOptions(INVALID_MODULE_OPTIONS, problems));
    this.processors = checked(() => this.explorer.explore()) ?? [];
    const events = checked(() => this.events.explore());
    if (refused.length === 1) throw refused[0];
    if (refused.length > 1)
      throw invalidOptions(
        CANNOT_START,
        refused.flatMap((e) => e.problems),
      );
    for (const [queueName, methods] of events!.workerEvents) {
      this.hooks.set(queueName, new WorkerEventHooks(queueName, methods, this.context.logger));
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    try {
      await this.startWorkers();
    } catch (e) {
      // A failed bootstrap runs no worker (one whose start goes on, a sandbox still booting,
      // would take jobs in an app its caller never got) and leaves no connection open.
      this.context.bootstrapFailed();
      throw e;
    }
  }

  private async startWorkers(): Promise<void> {
    const processors = this.processors.filter((p) => {
      const runs = this.context.runsWorker(p.queue.name);
      if (!runs) this.context.logger?.log(workerNotStarted(p.queue.name, p.classNames));
      return runs;
    });
    // (app.close() during app.init() may have run the shutdown hook first: start nothing then.)
    if (processors.length === 0 || this.closing) return;
    for (const p of processors) {
      const { sandbox, ...options } = p.options;
      const hooks = this.hooks.get(p.queue.name);
      const handler = sandbox
        ? processorSandbox(
            p.queue.name,
            p.classNames[0]!,
            sandbox,
            hooks && ((j) => hooks.started(j)),
          )
        : this.router(p);
      const worker = new Worker(p.queue, handler, {
        // getWorkers() shows the processor classes (unless @Processor() names the worker).
        name: p.classNames.join(',').slice(0, 100) || undefined,
        ...this.context.workerDefaults,
        ...options,
        autostart: false,
        closeTimeoutMs: this.context.shutdownTimeoutMs,
        cleanIntervalMs: 0, // WorkQueueCleaner cleans every registered queue
      });
      this.listen(worker, p);
      this.hooks.get(p.queue.name)?.attach(worker);
      this.context.addWorker(worker);
      // The first processor destroyed stops all workers at once; each waits for its own.
      const close = () => (void this.stop(), worker.close());
      for (const instance of p.instances)
        if (closeOnDestroy(instance, close)) this.closers.push([instance, close]);
    }
    // A worker that cannot start (Redis unreachable, too old, a sandbox booting) fails the bootstrap.
    const starts = await Promise.allSettled(
      processors.map(async (p) => {
        const worker = this.context.getWorker(p.queue.name)!;
        await this.startWithin(worker, p.queue).catch((e: unknown) => {
          throw byProcessor(e, p.queue.name, p.classNames);
        });
        this.context.logger?.log(workerStarted(p.queue.name, worker.concurrency, p.classNames));
      }),
    );
    const failed = starts.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
    if (failed.length === 0) {
      // Armed once the workers run: a second after a slow start (a sandbox booting) is not a
      // second after the bootstrap that the app enables its hooks after.
      if (!this.closing) this.warnIfNoShutdownHooks();
      return;
    }
    // Workers refused for their options (a sandbox that cannot boot): every problem of every one
    // in one error (what to fix, before another's Redis failure); else the first failure.
    const refused = failed.filter(
      (e): e is WorkQueueError => e instanceof WorkQueueError && e.code === 'INVALID_OPTIONS',
    );
    if (refused.length === 1) throw refused[0];
    if (refused.length > 1)
      throw invalidOptions(
        CANNOT_START_PROCESSORS,
        refused.flatMap((e) => e.problems),
      );
    throw failed[0];
  }

  /**
   * Start a worker, failing the bootstrap with a clear error when Redis does not answer within
   * `startTimeoutMs` (its start goes on until the worker is closed: see onApplicationBootstrap).
   */
  private async startWithin(worker: Worker, queue: WorkQueue): Promise<void> {
    const ms = WORK_QUEUE_MODULE_DEFAULTS.startTimeoutMs;
    const client = queue.client; // the module's connection, a named one, or the queue's own
    let lastError: string | undefined;
    const onError = (e: unknown) => {
      lastError = errorMessage(e);
    };
    client.on('error', onError);
    try {
      const started = await within(
        worker.start().then(() => true),
        ms,
      );
      if (!started) {
        // Say which step was slow: a sandbox loading its module is no Redis outage.
        const waits = worker.startWaits;
        if (waits.length === 1 && waits[0] === 'sandbox') {
          throw new WorkQueueError('TIMEOUT', workerSandboxStartTimeout(queue.name, ms));
        }
        throw new WorkQueueError(
          'REDIS_UNAVAILABLE',
          workerStartTimeout(queue.name, ms, waits, lastError),
        );
      }
    } finally {
      client.off('error', onError);
    }
  }

  beforeApplicationShutdown(): Promise<void> {
    if (this.hooksCheck) this.checkShutdownHooks();
    return this.stop();
  }

  private stop(): Promise<void> {
    for (const [instance, close] of this.closers.splice(0)) forgetCloser(instance, close);
    this.closing ??= this.closeWorkers();
    return this.closing;
  }

  private async closeWorkers(): Promise<void> {
    const timeoutMs = this.context.shutdownTimeoutMs;
    await Promise.all(this.context.workers.map((w) => w.close({ timeoutMs })));
  }

  /** Sends each job to the method of its name, else to the catch-all, else to the dead-letters. */
  private router(p: QueueProcessor): Handler<unknown, unknown> {
    const hooks = this.hooks.get(p.queue.name);
    return (job) => {
      const named = job.name === undefined ? undefined : p.named.get(job.name);
      const handler = named ?? p.catchAll;
      if (!handler) {
        throw new NonRetryableError(noHandler(job.name, p.classNames));
      }
      return handler.invoke(hooks ? hooks.started(job) : job);
    };
  }

  private listen(worker: Worker, p: QueueProcessor): void {
    const log = this.context.logger;
    const q = p.queue.name;
    worker.on('error', (e) => log?.error(workerError(q, errorMessage(e))));
    worker.on('dead', (job, e) => log?.warn(jobDead(q, job.id, errorMessage(e))));
    worker.on('retried', (job, e) =>
      log?.debug?.(jobRetrying(q, job.id, job.attempt, job.maxAttempts, errorMessage(e))),
    );
    worker.on('leaseLost', (job, reason) => log?.warn(leaseLost(q, job.id, reason)));
  }

  /**
   * Warns when no SIGTERM listener is found. None at bootstrap is not yet missing: a standalone
   * app (`NestFactory.createApplicationContext`) is bootstrapped before its caller can call
   * `app.enableShutdownHooks()`. Checked again a second later, or at close if sooner.
   */
  private warnIfNoShutdownHooks(): void {
    if (process.listenerCount('SIGTERM') > 0) return;
    this.hooksCheck = setTimeout(() => this.checkShutdownHooks(), SHUTDOWN_HOOKS_GRACE_MS);
    this.hooksCheck.unref();
  }

  private checkShutdownHooks(): void {
    clearTimeout(this.hooksCheck);
    this.hooksCheck = undefined;
    if (process.listenerCount('SIGTERM') > 0) return;
    this.context.logger?.warn(NO_SHUTDOWN_HOOKS);
  }
}
