/** Types of a worker's handler and of the events a worker tells about its jobs. */
import type { FailOutcome, Job } from './job.js';

/** Handles one job: returning completes it, throwing fails it. */
export type Handler<T, R> = (job: Job<T>) => R | Promise<R>;

export interface WorkerEvents<T, R> {
  completed: [job: Job<T>, result: R];
  failed: [job: Job<T>, error: unknown, outcome: FailOutcome];
  retried: [job: Job<T>, error: unknown];
  dead: [job: Job<T>, error: unknown];
  leaseLost: [job: Job<T>, reason: string];
  error: [error: unknown];
}
