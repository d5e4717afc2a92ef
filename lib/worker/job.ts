// The job handle a handler receives (`Job`: data, signal, progress, extend, rateLimited), the handler's
// type, and the events a worker tells about its jobs.
import { RateLimitError, WorkQueueError } from '../errors.js';
import type { FailOutcome, LeasedJob } from '../types.js';
import type { WorkerContext } from './context.js';
import type { Run } from './run-table.js';

/** What a handler receives. */
export interface Job<T = unknown> {
  readonly id: string;
  readonly data: T;
  readonly name: string | undefined;
  readonly priority: number;
  /** 1 for the first run; counts failed attempts. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly queueName: string;
  /** The trace context the job was added with (see `AddHook`); undefined when none. */
  readonly traceContext?: string | undefined;
  /** Aborts when the lease is lost, the job is cancelled, times out, or the worker closes. */
  readonly signal: AbortSignal;
  /** Record and publish progress; false when the lease is lost. */
  progress(value: unknown): Promise<boolean>;
  /** Push the lease deadline to now + ms; false when the lease is lost. */
  extend(ms?: number): Promise<boolean>;
  /**
   * "The remote API told me to wait": throws a `RateLimitError(ms)` — the job goes back to the
   * front without counting an attempt and the queue leases nothing for `ms` (a positive number,
   * as for RateLimitError; anything else throws INVALID_ARGUMENT, which fails the attempt).
   */
  rateLimited(ms: number): never;
}

export type Handler<T, R> = (job: Job<T>) => R | Promise<R>;

export interface WorkerEvents<T, R> {
  completed: [job: Job<T>, result: R];
  failed: [job: Job<T>, error: unknown, outcome: FailOutcome];
  retried: [job: Job<T>, error: unknown];
  dead: [job: Job<T>, error: unknown];
  leaseLost: [job: Job<T>, reason: string];
  error: [error: unknown];
}

/**
 * The handle for `run`'s handler. Its signal is created on first read (most handlers never read
 * it); progress and extend of a handed-off job wait until its lease is adopted (ours).
 */
export function createJob<T, R>(
  ctx: WorkerContext<T, R>,
  lease: LeasedJob<T>,
  run: () => Run<T>,
): Job<T> {
  const q = ctx.queue;
  const lost = (ok: boolean) => {
    if (!ok) ctx.runs.end(run(), { kind: 'lost', reason: 'lease lost' });
    return ok;
  };
  return {
    id: lease.id,
    data: lease.data,
    name: lease.name,
    priority: lease.priority,
    attempt: lease.attempt,
    maxAttempts: lease.maxAttempts,
    queueName: q.name,
    traceContext: lease.traceContext,
    get signal(): AbortSignal {
      return ctx.runs.signal(run());
    },
    progress: async (value) =>
      lost((await ctx.handoffs.adopted(lease)) && (await q.progress(lease, value))),
    extend: async (ms = ctx.settings.leaseMs) =>
      lost((await ctx.handoffs.adopted(lease)) && (await q.extend(lease, ms))[0]!),
    rateLimited(ms: number): never {
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
        throw new WorkQueueError(
          'INVALID_ARGUMENT',
          `job.rateLimited(ms): ms must be a positive number, got ${String(ms)}`,
        );
      }
      throw new RateLimitError(ms);
    },
  };
}
