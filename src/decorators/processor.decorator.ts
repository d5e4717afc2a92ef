// @Processor(queue, options?): marks a provider class as the consumer of a queue.
import { SetMetadata } from '@nestjs/common';
import type { ProcessorOptions } from '../interfaces/processor-options.interface.js';
import { callerFile } from '../sandbox/processor-file.js';
import { WORK_QUEUE_PROCESSOR_METADATA } from '../work-queue.constants.js';

/** What `@Processor()` records on a class. */
export interface ProcessorMetadata {
  readonly queueName: string;
  readonly options: ProcessorOptions;
}

/**
 * Marks a provider class as the consumer of a queue; its `@Process()` methods handle the jobs.
 * The class must be a singleton provider: request-scoped, durable and transient ones fail the
 * bootstrap. Worker options given here override the module's `defaults`. With `sandbox`, its
 * `@Process()` methods run in worker threads or child processes (docs/sandboxes.md): the file
 * calling `@Processor()` is recorded for them to import, unless `sandbox.file` names it.
 *
 * ```ts
 * @Processor('emails', { concurrency: 10 })
 * export class EmailProcessor {
 *   @Process('welcome') welcome(job: Job<EmailJob>) { ... }
 *   @Process() other(job: Job<EmailJob>) { ... }
 * }
 * ```
 */
export function Processor(queueName: string, options: ProcessorOptions = {}): ClassDecorator {
  // Recorded as given when it is not an object: the module lists it among every problem it
  // finds when it starts (a throw here would fail the import of the file).
  const object = typeof options === 'object' && options !== null;
  const sandbox = object ? options.sandbox : undefined;
  const recorded =
    typeof sandbox === 'object' && sandbox !== null && sandbox.file === undefined
      ? { ...options, sandbox: { ...sandbox, file: callerFile(Processor) } }
      : object
        ? { ...options }
        : options;
  const metadata: ProcessorMetadata = { queueName, options: recorded };
  return SetMetadata(WORK_QUEUE_PROCESSOR_METADATA, metadata);
}
