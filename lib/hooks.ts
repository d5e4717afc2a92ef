// Instrumentation seams (tracing, metrics): a queue's add hooks and a worker's run hooks. The
// core calls them and knows nothing of what they report to (see nestjs-work-queue/otel, /metrics).
import type { AddResult } from './types.js';
import type { Job } from './worker/job.js';

/** Longest trace context a job carries (longer ones are dropped, not stored). */
export const MAX_TRACE_CONTEXT = 512;

/**
 * Around each `add`/`addBulk` call of a queue (`queue.useAddHook(hook)`). `send` writes the
 * call's jobs, each carrying `traceContext` (an opaque string of at most 512 characters, stored
 * in the job's metadata, not its payload) as `job.traceContext`; call it exactly once and return
 * its promise's outcome.
 */
export interface AddHook {
  aroundAdd(
    queueName: string,
    jobs: number,
    send: (traceContext: string | undefined) => Promise<AddResult[]>,
  ): Promise<AddResult[]>;
}

/**
 * Around each handler call of a worker (`worker.useRunHook(hook)`): `run` calls the handler (or
 * the next hook); call it exactly once and return (or rethrow) its outcome.
 */
export interface RunHook {
  aroundRun<X>(job: Job<unknown>, run: () => Promise<X>): Promise<X>;
}

/** `send` inside every hook (the first installed innermost); an inner hook's context wins. */
export function runAddHooks(
  hooks: readonly AddHook[],
  queueName: string,
  jobs: number,
  send: (traceContext: string | undefined) => Promise<AddResult[]>,
): Promise<AddResult[]> {
  let next = send;
  for (const hook of hooks) {
    const inner = next;
    next = (outer) => hook.aroundAdd(queueName, jobs, (own) => inner(own ?? outer));
  }
  return next(undefined);
}

/** `run` inside every hook (the first installed innermost). */
export function runRunHooks<X>(
  hooks: readonly RunHook[],
  job: Job<unknown>,
  run: () => Promise<X>,
): Promise<X> {
  let next = run;
  for (const hook of hooks) {
    const inner = next;
    next = () => hook.aroundRun(job, inner);
  }
  return next();
}
