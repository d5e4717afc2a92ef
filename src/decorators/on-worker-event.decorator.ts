// @OnWorkerEvent(event): a method of a @Processor() class called on its worker's events.
import type { FailOutcome, Job } from '../../lib/internal.js';
import { WORK_QUEUE_WORKER_EVENT_METADATA } from '../work-queue.constants.js';
import { appendMethodMetadata } from './append-metadata.js';

/**
 * The arguments of each worker event. `completed`, `failed`, `retried`, `dead`, `leaseLost` and
 * `error` are the core Worker's own events; `active` (a handler is about to run the job) and
 * `progress` (the handler's `job.progress(value)` was recorded) are told by the Nest module,
 * which calls the handlers.
 */
export interface WorkerEventArgs {
  active: [job: Job];
  progress: [job: Job, progress: unknown];
  completed: [job: Job, result: unknown];
  failed: [job: Job, error: unknown, outcome: FailOutcome];
  retried: [job: Job, error: unknown];
  dead: [job: Job, error: unknown];
  leaseLost: [job: Job, reason: string];
  error: [error: unknown];
}

export type WorkerEventName = keyof WorkerEventArgs;

/** Every worker event name, for validation at bootstrap. */
export const WORKER_EVENT_NAMES: readonly WorkerEventName[] = [
  'active',
  'progress',
  'completed',
  'failed',
  'retried',
  'dead',
  'leaseLost',
  'error',
];

/** A method taking an event's arguments (its parameters may be narrower: `Job<EmailJob>`). */
type ListenerOf<A extends unknown[]> = { bivariant(...args: A): unknown }['bivariant'];

/**
 * Calls the decorated method of a `@Processor()` class on an event of the worker this
 * application runs for that queue (this process only; `@OnQueueEvent` hears every process):
 *
 * ```ts
 * @OnWorkerEvent('completed')
 * onCompleted(job: Job<EmailJob>, result: EmailResult) { ... }
 * ```
 *
 * A method that throws or rejects is logged, never fatal. Several `@Processor()` classes of one
 * queue share its worker, so each hears the events of all of their jobs.
 */
export function OnWorkerEvent<E extends WorkerEventName>(event: E) {
  return <M extends ListenerOf<WorkerEventArgs[E]>>(
    _target: object,
    _key: string | symbol,
    descriptor: TypedPropertyDescriptor<M>,
  ): void => appendMethodMetadata(WORK_QUEUE_WORKER_EVENT_METADATA, event, descriptor.value);
}
