/**
 * A fault-suite worker process that is a small Nest application: `WorkQueueModule.forRoot` +
 * `registerQueue` + a `@Processor` whose `@Process()` method runs the shared fault handler
 * (handler.ts), with `app.enableShutdownHooks()` so that SIGTERM drains the worker.
 *
 * Run by run.ts: `node --import ./scripts/register-ts.mjs test/faults/nest-worker.ts '<JSON>'`.
 * Sends `{ type: 'ready', workerIds }` over IPC after `app.init()`; logs `S` (SIGTERM
 * received) and `Q` (shutdown hooks done) events around a graceful shutdown.
 */
import 'reflect-metadata';
import { Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import {
  errorMessage,
  Process,
  Processor,
  WorkQueueContext,
  WorkQueueModule,
  type Job,
  type WorkerOptions,
  type WorkQueueOptions,
} from '../../src/index.js';
import { faultHandler, logReconnects, openLog, type FaultJob } from './handler.js';

export interface NestWorkerConfig {
  redisUrl: string;
  prefix: string;
  queue: string;
  queueOptions: Omit<WorkQueueOptions, 'prefix' | 'logger'>;
  workerOptions: Pick<WorkerOptions, 'concurrency' | 'jobTimeoutMs'>;
  /** Undefined: the module's default. */
  shutdownTimeoutMs?: number;
  /** 0: the module's cleaner off (the orchestrator cleans); 'default': the module's own. */
  cleanerIntervalMs: number | 'default';
  logDir: string;
}

const config = JSON.parse(process.argv[2] ?? '{}') as NestWorkerConfig;
const log = openLog(config.logDir);
const handle = faultHandler(config.queue, log);

@Processor(config.queue, config.workerOptions)
class FaultProcessor {
  @Process()
  run(job: Job<FaultJob>) {
    return handle(job);
  }
}

@Injectable()
class ShutdownMarker implements OnApplicationShutdown {
  onApplicationShutdown(signal?: string): void {
    log.event('Q', config.queue, '-', String(signal));
  }
}

@Module({
  imports: [
    WorkQueueModule.forRoot({
      connection: { url: config.redisUrl },
      prefix: config.prefix,
      logger: false,
      shutdownTimeoutMs: config.shutdownTimeoutMs,
      // The orchestrator cleans (and counts what clean() reclaims); 0 = the module's cleaner off.
      cleaner:
        config.cleanerIntervalMs === 'default'
          ? undefined
          : config.cleanerIntervalMs > 0
            ? { intervalMs: config.cleanerIntervalMs }
            : false,
    }),
    WorkQueueModule.registerQueue({ name: config.queue, ...config.queueOptions }),
  ],
  providers: [FaultProcessor, ShutdownMarker],
})
class FaultAppModule {}

process.prependListener('SIGTERM', () => log.event('S', config.queue, '-', 'SIGTERM'));

const app = await NestFactory.createApplicationContext(FaultAppModule, { logger: false });
app.enableShutdownHooks();
await app.init();
const worker = app.get(WorkQueueContext).getWorker<FaultJob>(config.queue)!;
worker.on('completed', (job) => log.done(config.queue, job));
worker.on('leaseLost', (job, reason) => log.event('L', config.queue, job.id, reason));
worker.on('failed', (job, error, outcome) =>
  log.event('F', config.queue, job.id, outcome, errorMessage(error)),
);
worker.on('error', (e) => log.event('X', config.queue, '-', errorMessage(e)));
logReconnects(log, config.queue, worker.queue.client);
process.send?.({ type: 'ready', workerIds: [worker.workerId] });
