/** Instrumentation seams (tracing, metrics): a queue's add hooks and a worker's run hooks. The core
 * calls them and knows nothing of what they report to (see nestjs-work-queue/otel, /metrics). */
import type { AddResult, Job } from './job.js';

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
