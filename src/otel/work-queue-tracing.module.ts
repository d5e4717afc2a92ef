// The Nest side of nestjs-work-queue/otel: WorkQueueTracingModule traces the app's registered
// queues (adds) and the workers of its processors (runs), from WorkQueueContext.
import {
  Injectable,
  Module,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { WorkQueueContext } from '../work-queue.context.js';
import { instrumentQueue, instrumentWorker } from './tracing.js';

/** Instruments every registered queue at module init, every processor's worker at bootstrap. */
@Injectable()
export class WorkQueueTracing
  implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown
{
  private readonly undo: Array<() => void> = [];

  constructor(private readonly context: WorkQueueContext) {}

  onModuleInit(): void {
    for (const q of this.context.queues) this.undo.push(instrumentQueue(q));
  }

  onApplicationBootstrap(): void {
    for (const q of this.context.queues) this.undo.push(instrumentQueue(q));
    for (const w of this.context.workers) this.undo.push(instrumentWorker(w));
  }

  onApplicationShutdown(): void {
    for (const undo of this.undo.splice(0)) undo();
  }
}

/**
 * `imports: [WorkQueueTracingModule]` (with `WorkQueueModule.forRoot()`): adds and handler runs
 * of the app's queues are traced with the globally registered tracer provider and propagator.
 */
@Module({ providers: [WorkQueueTracing], exports: [WorkQueueTracing] })
export class WorkQueueTracingModule {}
