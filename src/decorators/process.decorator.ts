// @Process(name?): marks the method of a @Processor() class that handles jobs (of one name).
import { SetMetadata } from '@nestjs/common';
import { WORK_QUEUE_PROCESS_METADATA } from '../work-queue.constants.js';

/** What `@Process()` records on a method. */
export interface ProcessMetadata {
  /** The job name the method handles; undefined for the catch-all method. */
  readonly name: string | undefined;
}

/**
 * Marks a method of a `@Processor()` class as a job handler. `@Process('welcome')` handles jobs
 * added with `{ name: 'welcome' }`; `@Process()` handles every other job (unnamed jobs, and named
 * jobs without a method of their own). A job that no method handles is dead-lettered at once.
 *
 * The method receives the job (`id`, `data`, `name`, `attempt`, `signal`, `progress()`,
 * `extend()`); returning (or resolving) completes it, throwing (or rejecting) fails it.
 */
export function Process(name?: string): MethodDecorator {
  const metadata: ProcessMetadata = { name };
  return SetMetadata(WORK_QUEUE_PROCESS_METADATA, metadata);
}
