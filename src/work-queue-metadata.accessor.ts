// Reads the metadata @Processor() and @Process() record. Internal: not exported from the
// package.
import { Injectable, type Type } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { ProcessMetadata } from './decorators/process.decorator.js';
import type { ProcessorMetadata } from './decorators/processor.decorator.js';
import {
  WORK_QUEUE_PROCESS_METADATA,
  WORK_QUEUE_PROCESSOR_METADATA,
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
}
