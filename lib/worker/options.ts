// The Worker's options: what each one means, their validation, and their resolved values.
// Defaults that depend on the queue are filled in by `resolveWorkerOptions`.
import { invalidOptions } from '../errors.js';
import { defaultCleanInterval } from '../options.js';
import type { WorkQueue } from '../queue/index.js';
import { handlerProblems } from '../sandbox/options.js';
import { shown, timerProblem } from '../util/checks.js';
import { nestedUnknown, unknownOptionProblems } from '../util/unknown-options.js';
import type { Job } from '../types/job.js';

/**
 * The delay before a failed job's next attempt (ms, an integer >= 0), from the attempt that
 * failed (1-based), its error and its job; undefined: the job's own backoff (the queue's
 * `backoff`, or the job's). Not called for an error that dead-letters (last attempt,
 * `NonRetryableError`).
 */
export type BackoffStrategy = (
  attempt: number,
  error: unknown,
  job: Job<unknown>,
) => number | undefined;

export interface WorkerOptions {
  /** Jobs in flight at once. Default 1. */
  concurrency?: number;
  /** Lease length; leases of running jobs are renewed every third of it. Default the queue's. */
  leaseMs?: number;
  /**
   * Jobs leased ahead of free slots, so the next one starts without waiting for a round trip.
   * Their leases run (and are renewed) while they wait; `pause()` and `close()` give them back.
   * Default 'auto': as many as the worker finishes in two round trips to Redis, the two lease
   * calls it keeps in flight (measured: 2 × the average round trip of its calls × concurrency /
   * the average handler time), at least 1 and at most concurrency + 128 (each of the two calls
   * then asks for up to concurrency + 64) — so 1 for jobs that take longer than two round trips
   * (a buffered job waits at most about one job), more for jobs much shorter. A number pins it;
   * 0 turns it off.
   */
  prefetch?: number | 'auto';
  /** A handler running longer is aborted and its job failed (an attempt). Default: no limit. */
  jobTimeoutMs?: number;
  /** Longest idle wait before looking again, in case a wake-up was lost. Default 5 000 ms. */
  idleTimeoutMs?: number;
  /** Heartbeat period. Default a quarter of the queue's `heartbeatTimeoutMs`. */
  heartbeatIntervalMs?: number;
  /** Start at construction. Default true; otherwise call `start()`. */
  autostart?: boolean;
  /** Drain timeout used by `close()` when none is given. Default 10 000 ms. */
  closeTimeoutMs?: number;
  /**
   * Run the queue's `clean()` this often (at most once per interval across all workers and
   * processes: a guard key in Redis), so that a crashed worker's jobs come back within seconds
   * without a cleaner of your own. Default a quarter of the queue's heartbeat timeout (500 ms
   * with defaults); 0 turns it off (the Nest module runs its own cleaner instead).
   */
  cleanIntervalMs?: number;
  /** Retry delays of this worker's failed jobs (see {@link BackoffStrategy}). */
  backoffStrategy?: BackoffStrategy;
  /** A name `getWorkers()` shows (1-100 characters), e.g. the service or processor. */
  name?: string;
}

/** Every option with its default applied (what the parts of a worker read). */
export interface WorkerSettings {
  readonly concurrency: number;
  readonly leaseMs: number;
  /** The `prefetch` option as given ('auto' unless pinned). */
  readonly prefetch: number | 'auto';
  readonly jobTimeoutMs: number | undefined;
  readonly idleTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly closeTimeoutMs: number;
  readonly cleanIntervalMs: number;
  readonly backoffStrategy: BackoffStrategy | undefined;
  readonly name: string | undefined;
}

/** Every Worker option (a Record: the compiler notices an option added to WorkerOptions). */
const WORKER_OPTION_KEYS: Record<keyof WorkerOptions, true> = {
  concurrency: true,
  leaseMs: true,
  prefetch: true,
  jobTimeoutMs: true,
  idleTimeoutMs: true,
  heartbeatIntervalMs: true,
  autostart: true,
  closeTimeoutMs: true,
  cleanIntervalMs: true,
  backoffStrategy: true,
  name: true,
};

/** Why `queue` is no WorkQueue (BullMQ's `new Worker(name, processor, { connection })`, …). */
function queueProblems(queue: unknown): string[] {
  const q = queue as { options?: { heartbeatTimeoutMs?: unknown }; keys?: unknown } | null;
  if (typeof q?.options?.heartbeatTimeoutMs === 'number' && typeof q.keys === 'object') return [];
  const bullmq =
    typeof queue === 'string'
      ? `: BullMQ's new Worker(name, processor, { connection }) is new Worker(new WorkQueue(new Redis(connection), name), handler) here`
      : '';
  return [`queue must be a WorkQueue, got ${shown(queue)}${bullmq}`];
}

/**
 * Validate `options` and the handler (a function, or sandbox options: lib/sandbox/options.ts);
 * throws INVALID_OPTIONS with every problem. Fills in the defaults.
 */
export function resolveWorkerOptions<T, R>(
  queue: WorkQueue<T, R>,
  options: WorkerOptions,
  handler: unknown,
): WorkerSettings {
  const noQueue = queueProblems(queue);
  const problems = [...noQueue, ...handlerProblems(handler)];
  if (typeof options !== 'object' || options === null)
    problems.push(`options must be an object, got ${shown(options)}`);
  else
    problems.push(
      ...unknownOptionProblems(options, WORKER_OPTION_KEYS),
      ...workerOptionProblems(options),
    );
  // (Against the queue's heartbeat timeout: when there is a queue.)
  const beat =
    noQueue.length === 0 &&
    heartbeatIntervalProblem(
      (options as WorkerOptions | null)?.heartbeatIntervalMs,
      queue.options.heartbeatTimeoutMs,
    );
  if (beat) problems.push(beat);
  if (problems.length) {
    throw invalidOptions('invalid worker options', problems);
  }
  const { heartbeatTimeoutMs } = queue.options;
  const leaseMs = options.leaseMs ?? queue.options.leaseMs;
  return {
    concurrency: options.concurrency ?? 1,
    prefetch: options.prefetch ?? 'auto',
    leaseMs,
    idleTimeoutMs: options.idleTimeoutMs ?? 5_000,
    jobTimeoutMs: options.jobTimeoutMs,
    // (A quarter of the timeout, at least 100 ms but at most half of it: for a timeout < 200 ms.)
    heartbeatIntervalMs:
      options.heartbeatIntervalMs ??
      Math.max(
        1,
        Math.min(
          Math.floor(heartbeatTimeoutMs / 2),
          Math.max(100, Math.floor(heartbeatTimeoutMs / 4)),
        ),
      ),
    closeTimeoutMs: options.closeTimeoutMs ?? 10_000,
    // (This worker's own leaseMs: its leases lapse as fast as that.)
    cleanIntervalMs:
      options.cleanIntervalMs ??
      defaultCleanInterval([{ options: { heartbeatTimeoutMs, leaseMs } }]),
    backoffStrategy: options.backoffStrategy,
    name: options.name,
  };
}

/**
 * A heartbeatIntervalMs over half the queue's heartbeatTimeoutMs: the worker would be taken for
 * dead after one late beat (or between beats). `at` names where it was given.
 */
export function heartbeatIntervalProblem(
  interval: unknown,
  heartbeatTimeoutMs: number,
  at = '',
): string | undefined {
  if (typeof interval !== 'number' || interval <= heartbeatTimeoutMs / 2) return undefined;
  return `${at}heartbeatIntervalMs must be at most half the queue's heartbeatTimeoutMs (${heartbeatTimeoutMs}: a worker is dead once it passed without a beat, so one late beat must not be enough; default a quarter of it), got ${interval}`;
}

/** A close's `timeoutMs` (the option closeTimeoutMs, or close()'s): a number of ms 0..2^31-1. */
export function closeTimeoutProblem(name: string, v: unknown): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !(v >= 0)) return `${name} must be a number >= 0, got ${shown(v)}`;
  return timerProblem(name, v);
}

/** The problems of close()'s argument: `{ timeoutMs? }`, nothing else (BullMQ's `close(true)`). */
export function closeOptionProblems(opts: unknown): string[] {
  if (opts === undefined) return [];
  if (typeof opts !== 'object' || opts === null || Array.isArray(opts))
    return [
      `close takes { timeoutMs? }, got ${shown(opts)} (BullMQ's close(true) is timeoutMs: 0)`,
    ];
  const problems: string[] = [];
  nestedUnknown('close', opts, ['timeoutMs'], problems, {
    force: "BullMQ's force is timeoutMs: 0",
    timeout: 'timeoutMs',
  });
  const problem = closeTimeoutProblem('timeoutMs', (opts as { timeoutMs?: unknown }).timeoutMs);
  if (problem) problems.push(problem);
  return problems;
}

export function workerOptionProblems(o: WorkerOptions, path = ''): string[] {
  const problems: string[] = [];
  for (const k of [
    'concurrency',
    'leaseMs',
    'jobTimeoutMs',
    'idleTimeoutMs',
    'heartbeatIntervalMs',
  ] as const) {
    const v = o[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)) {
      problems.push(`${path}${k} must be a positive integer, got ${shown(v)}`);
    } else if (k !== 'concurrency') {
      const over = timerProblem(`${path}${k}`, v);
      if (over) problems.push(over);
    }
  }
  const over = timerProblem(`${path}cleanIntervalMs`, o.cleanIntervalMs);
  if (over) problems.push(over);
  if (
    o.cleanIntervalMs !== undefined &&
    (typeof o.cleanIntervalMs !== 'number' ||
      !Number.isInteger(o.cleanIntervalMs) ||
      o.cleanIntervalMs < 0)
  ) {
    problems.push(
      `${path}cleanIntervalMs must be an integer >= 0, got ${shown(o.cleanIntervalMs)}`,
    );
  }
  const close = closeTimeoutProblem(`${path}closeTimeoutMs`, o.closeTimeoutMs);
  if (close) problems.push(close);
  if (o.autostart !== undefined && typeof o.autostart !== 'boolean')
    problems.push(`${path}autostart must be a boolean, got ${shown(o.autostart)}`);
  if (
    o.prefetch !== undefined &&
    o.prefetch !== 'auto' &&
    (typeof o.prefetch !== 'number' ||
      !Number.isInteger(o.prefetch) ||
      o.prefetch < 0 ||
      o.prefetch > 10_000)
  ) {
    problems.push(
      `${path}prefetch must be 'auto' or an integer 0..10000, got ${shown(o.prefetch)}`,
    );
  }
  // (Only a number that passed the check above: a string or a Symbol is one problem, listed there.)
  if (typeof o.concurrency === 'number' && o.concurrency > 10_000)
    problems.push(`${path}concurrency must be at most 10000`);
  if (o.backoffStrategy !== undefined && typeof o.backoffStrategy !== 'function')
    problems.push(
      `${path}backoffStrategy must be a function (attempt, error, job) => ms | undefined`,
    );
  if (
    o.name !== undefined &&
    (typeof o.name !== 'string' || o.name.length === 0 || o.name.length > 100)
  )
    problems.push(`${path}name must be a string of 1-100 characters, got ${shown(o.name)}`);
  return problems;
}
