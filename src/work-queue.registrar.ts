import {
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import {
  errorMessage,
  NonRetryableError,
  Worker,
  WorkQueueError,
  type Handler,
  type WorkQueue,
} from '../lib/index.js';
import { WORK_QUEUE_MODULE_DEFAULTS } from './work-queue.constants.js';
import { WorkQueueContext } from './work-queue.context.js';
import { WorkQueueExplorer, type QueueProcessor } from './work-queue.explorer.js';

/**
 * Runs the processors the explorer found: one worker per queue. Collects in `onModuleInit`
 * (bad processors fail the bootstrap), starts in `onApplicationBootstrap` (the bootstrap waits
 * until every worker is registered and leasing), drains in `beforeApplicationShutdown`: running
 * jobs get `shutdownTimeoutMs` to finish, then are released to the front of their queue.
 */
@Injectable()
export class WorkQueueRegistrar
  implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown
{
  private processors: QueueProcessor[] = [];
  private readonly workers = new Map<string, Worker>();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly explorer: WorkQueueExplorer,
    private readonly context: WorkQueueContext,
  ) {}

  onModuleInit(): void {
    this.processors = this.explorer.explore();
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.processors.length === 0) return;
    this.warnIfNoShutdownHooks();
    for (const p of this.processors) {
      const worker = new Worker(p.queue, this.router(p), {
        ...this.context.workerDefaults,
        ...p.options,
        autostart: false,
        closeTimeoutMs: this.context.shutdownTimeoutMs,
        cleanIntervalMs: 0, // WorkQueueCleaner cleans every registered queue
      });
      this.listen(worker, p);
      this.workers.set(p.queue.name, worker);
    }
    // If a worker cannot start (Redis unreachable, too old), the bootstrap fails; app.close()
    // still closes the workers that did start.
    await Promise.all(
      this.processors.map(async (p) => {
        const worker = this.workers.get(p.queue.name)!;
        await this.startWithin(worker, p.queue);
        this.context.logger?.log(
          `worker of queue "${p.queue.name}" started (concurrency ${worker.concurrency}; ${p.classNames.join(', ')})`,
        );
      }),
    );
  }

  /**
   * Start a worker, failing the bootstrap with a clear error when Redis does not answer within
   * `startTimeoutMs` (the client would otherwise retry for about 75 s). The start goes on in the
   * background; `app.close()` closes the worker.
   */
  private async startWithin(worker: Worker, queue: WorkQueue): Promise<void> {
    const ms = WORK_QUEUE_MODULE_DEFAULTS.startTimeoutMs;
    const client = queue.client; // the module's connection, a named one, or the queue's own
    let lastError: string | undefined;
    const onError = (e: unknown) => {
      lastError = errorMessage(e);
    };
    client.on('error', onError);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        worker.start(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            const why = lastError ? `: ${lastError}` : '';
            reject(
              new WorkQueueError(
                'REDIS_UNAVAILABLE',
                `queue "${queue.name}": its worker could not start within ${ms} ms, Redis did not answer${why}`,
              ),
            );
          }, ms);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      client.off('error', onError);
    }
  }

  beforeApplicationShutdown(): Promise<void> {
    this.closing ??= this.closeWorkers();
    return this.closing;
  }

  /** The worker of a queue that has a `@Processor()` (after bootstrap), e.g. to pause it. */
  getWorker<T = unknown, R = unknown>(queueName: string): Worker<T, R> | undefined {
    return this.workers.get(queueName) as Worker<T, R> | undefined;
  }

  private async closeWorkers(): Promise<void> {
    const timeoutMs = this.context.shutdownTimeoutMs;
    await Promise.all([...this.workers.values()].map((w) => w.close({ timeoutMs })));
  }

  /** Sends each job to the method of its name, else to the catch-all, else to the dead-letters. */
  private router(p: QueueProcessor): Handler<unknown, unknown> {
    const where = p.classNames.join(', ');
    return (job) => {
      const named = job.name === undefined ? undefined : p.named.get(job.name);
      const handler = named ?? p.catchAll;
      if (!handler) {
        throw new NonRetryableError(
          job.name === undefined
            ? `no @Process() handler for unnamed jobs in ${where}`
            : `no @Process() handler for job name ${JSON.stringify(job.name)} in ${where}`,
        );
      }
      return handler.invoke(job);
    };
  }

  private listen(worker: Worker, p: QueueProcessor): void {
    const log = this.context.logger;
    const q = p.queue.name;
    worker.on('error', (e) => log?.error(`queue "${q}": worker error: ${errorMessage(e)}`));
    worker.on('dead', (job, e) =>
      log?.warn(`queue "${q}": job ${job.id} dead-lettered: ${errorMessage(e)}`),
    );
    worker.on('retried', (job, e) =>
      log?.debug?.(
        `queue "${q}": job ${job.id} failed attempt ${job.attempt}/${job.maxAttempts}, will retry: ${errorMessage(e)}`,
      ),
    );
    worker.on('leaseLost', (job, reason) =>
      log?.warn(`queue "${q}": job ${job.id}: ${reason}; its result is not recorded here`),
    );
  }

  private warnIfNoShutdownHooks(): void {
    if (process.listenerCount('SIGTERM') > 0) return;
    this.context.logger?.warn(
      'No SIGTERM listener found: call app.enableShutdownHooks() so that workers drain on shutdown (running jobs finish or go back to their queue at once); without it they are only recovered when their leases or heartbeats expire',
    );
  }
}
