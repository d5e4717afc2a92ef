// The job handle a handler receives (`Job`: data, signal, progress, extend, rateLimited), the handler's
// type, and the events a worker tells about its jobs.
import { RateLimitError, WorkQueueError } from '../errors.js';
import type { FailOutcome } from '../types.js';
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
 * The handle for a run's handler. One class, so every job shares one shape: its data as own
 * fields, `progress`, `extend` and `rateLimited` as own functions (a handler may pass them around unbound),
 * `signal` a getter of the class, creating the AbortController on first read (most handlers never
 * read it). Progress and extend of a handed-off job wait until its lease is adopted (ours).
 */
class RunJob<T, R> implements Job<T> {
  readonly id: string;
  readonly data: T;
  readonly name: string | undefined;
  readonly priority: number;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly queueName: string;
  readonly traceContext: string | undefined;
  readonly #ctx: WorkerContext<T, R>;
  readonly #run: Run<T>;

  constructor(ctx: WorkerContext<T, R>, run: Run<T>) {
    const lease = run.lease;
    this.id = lease.id;
    this.data = lease.data;
    this.name = lease.name;
    this.priority = lease.priority;
    this.attempt = lease.attempt;
    this.maxAttempts = lease.maxAttempts;
    this.queueName = ctx.queue.name;
    this.traceContext = lease.traceContext;
    this.#ctx = ctx;
    this.#run = run;
  }

  get signal(): AbortSignal {
    return this.#ctx.runs.signal(this.#run);
  }

  readonly progress = async (value: unknown): Promise<boolean> => {
    const { handoffs, queue } = this.#ctx;
    const lease = this.#run.lease;
    return this.#lost((await handoffs.adopted(lease)) && (await queue.progress(lease, value)));
  };

  readonly extend = async (ms: number = this.#ctx.settings.leaseMs): Promise<boolean> => {
    const { handoffs, queue } = this.#ctx;
    const lease = this.#run.lease;
    return this.#lost((await handoffs.adopted(lease)) && (await queue.extend(lease, ms))[0]!);
  };

  readonly rateLimited = (ms: number): never => {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0) {
      throw new WorkQueueError(
        'INVALID_ARGUMENT',
        `job.rateLimited(ms): ms must be a positive number, got ${String(ms)}`,
      );
    }
    throw new RateLimitError(ms);
  };

  #lost(ok: boolean): boolean {
    if (!ok) this.#ctx.runs.end(this.#run, { kind: 'lost', reason: 'lease lost' });
    return ok;
  }
}

/** The job handle of `run` (see RunJob). */
export function createJob<T, R>(ctx: WorkerContext<T, R>, run: Run<T>): Job<T> {
  return new RunJob(ctx, run);
}
