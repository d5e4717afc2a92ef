// Shared by the Nest event-hook tests (test/e2e/nest-events*.test.ts): an app module on a given
// prefix with the queue 'mail', a processor with @OnWorkerEvent methods, a queue-events listener.
import { Module, type Type } from '@nestjs/common';
import {
  OnQueueEvent,
  OnWorkerEvent,
  Process,
  Processor,
  QueueEventsListener,
  WorkQueueModule,
  type FailOutcome,
  type Job,
  type QueueEvent,
  type QueueEventOf,
  type RegisterQueueOptions,
} from '../../src/index.js';
import { testRedisUrl } from './keys.js';
import type { MemoryLogger } from './nest-app.js';

export interface MailJob {
  to: string;
  fail?: boolean;
  /** The handler sets the job's data to `{ to: forward }` (local only: not stored). */
  forward?: string;
}

/** A module with forRoot on `prefix`, the queue 'mail' and the given providers/controllers. */
export function appModule(
  prefix: string,
  providers: Type[],
  logger: MemoryLogger,
  controllers: Type[] = [],
  queue: Partial<RegisterQueueOptions> = {},
): Type {
  @Module({
    imports: [
      WorkQueueModule.forRoot({
        connection: { url: testRedisUrl() },
        prefix,
        logger,
        defaults: { backoff: { type: 'fixed', delayMs: 10 }, maxAttempts: 2 },
      }),
      WorkQueueModule.registerQueue({ name: 'mail', ...queue }),
    ],
    providers,
    controllers,
  })
  class AppModule {}
  return AppModule;
}

@Processor('mail', { concurrency: 4 })
export class MailProcessor {
  readonly events: string[] = [];
  readonly results = new Map<string, unknown>();
  /** The data of each job its 'completed' listener read. */
  readonly completedData = new Map<string, MailJob>();
  readonly progress: unknown[] = [];
  /** Per run: the handler's job had a live signal (it is a getter of the core's job class). */
  readonly signals: boolean[] = [];

  @Process()
  async send(job: Job<MailJob>) {
    this.signals.push(job.signal instanceof AbortSignal && !job.signal.aborted);
    await job.progress(0.5);
    await job.progress(1); // (a second call: the job's own progress is made by the first)
    // (Through the view of the job that tells 'progress': a plain JavaScript assignment.)
    if (job.data.forward) (job as { data: MailJob }).data = { to: job.data.forward };
    if (job.data.fail) throw new Error(`no mailbox ${job.data.to}`);
    return { sentTo: job.data.to };
  }

  @OnWorkerEvent('active')
  active(job: Job<MailJob>) {
    this.events.push(`active ${job.id}`);
  }

  @OnWorkerEvent('progress')
  onProgress(job: Job<MailJob>, value: unknown) {
    this.progress.push([job.id, value]);
  }

  @OnWorkerEvent('completed')
  completed(job: Job<MailJob>, result: { sentTo: string }) {
    this.events.push(`completed ${job.id}`);
    this.results.set(job.id, result);
    this.completedData.set(job.id, job.data);
  }

  @OnWorkerEvent('failed')
  @OnWorkerEvent('dead')
  failedOrDead(job: Job<MailJob>, error: unknown, outcome?: FailOutcome) {
    this.events.push(`${outcome ?? 'dead'} ${job.id}: ${(error as Error).message}`);
  }
}

@QueueEventsListener('mail')
export class MailEvents {
  readonly heard: QueueEvent[] = [];

  @OnQueueEvent('completed')
  completed(e: QueueEventOf<'completed'>) {
    this.heard.push(e);
  }

  @OnQueueEvent('dead')
  @OnQueueEvent('added')
  other(e: QueueEvent) {
    this.heard.push(e);
  }
}
