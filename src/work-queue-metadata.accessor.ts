// Reads the metadata the decorators record (@Processor, @Process, @OnWorkerEvent,
// @QueueEventsListener, @OnQueueEvent). Internal: not exported from the package.
import { Injectable, type Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { ProcessMetadata } from './decorators/process.decorator.js';
import type { ProcessorMetadata } from './decorators/processor.decorator.js';
import type { QueueEventsListenerMetadata } from './decorators/queue-events-listener.decorator.js';
import {
  WORK_QUEUE_EVENTS_LISTENER_METADATA,
  WORK_QUEUE_PROCESS_METADATA,
  WORK_QUEUE_PROCESSOR_METADATA,
  WORK_QUEUE_QUEUE_EVENT_METADATA,
  WORK_QUEUE_WORKER_EVENT_METADATA,
} from './work-queue.constants.js';

/** A class or a method: anything decorators put metadata on. */
type Target = Type<unknown> | ((...args: never[]) => unknown);

/** Reads what `@Processor()` and `@Process()` recorded. Reads only; finds nothing. */
@Injectable()
export class WorkQueueMetadataAccessor {
  constructor(private readonly reflector: Reflector) {}

  /** The `@Processor()` metadata of a class, if it has any. */
  getProcessorMetadata(target: unknown): ProcessorMetadata | undefined {
    if (typeof target !== 'function') return undefined;
    return this.reflector.get<ProcessorMetadata | undefined>(
      WORK_QUEUE_PROCESSOR_METADATA,
      target as Target,
    );
  }

  /** The `@Process()` metadata of a method, if it has any. */
  getProcessMetadata(method: unknown): ProcessMetadata | undefined {
    if (typeof method !== 'function') return undefined;
    return this.reflector.get<ProcessMetadata | undefined>(
      WORK_QUEUE_PROCESS_METADATA,
      method as Target,
    );
  }

  /** The `@QueueEventsListener()` metadata of a class, if it has any. */
  getQueueEventsListenerMetadata(target: unknown): QueueEventsListenerMetadata | undefined {
    if (typeof target !== 'function') return undefined;
    return this.reflector.get<QueueEventsListenerMetadata | undefined>(
      WORK_QUEUE_EVENTS_LISTENER_METADATA,
      target as Target,
    );
  }

  /** The events named by `@OnWorkerEvent()` on a method (empty when none). */
  getWorkerEvents(method: unknown): readonly string[] {
    return this.list(WORK_QUEUE_WORKER_EVENT_METADATA, method);
  }

  /** The kinds named by `@OnQueueEvent()` on a method (empty when none). */
  getQueueEvents(method: unknown): readonly string[] {
    return this.list(WORK_QUEUE_QUEUE_EVENT_METADATA, method);
  }

  private list(key: string, method: unknown): readonly string[] {
    if (typeof method !== 'function') return [];
    return this.reflector.get<string[] | undefined>(key, method as Target) ?? [];
  }
}
