// The retry delay of a failed attempt when the worker has a `backoffStrategy` (else the job's
// backoff applies: undefined).
import { errorMessage, WorkQueueError } from '../errors.js';
import { MAX_DELAY_MS } from '../util/checks.js';
import type { WorkerContext } from './context.js';
import type { Run } from './parts.js';

/**
 * The worker's `backoffStrategy(attempt, error, job)` for this failed run: its answer (ms, an
 * 0..MAX_DELAY_MS), or undefined for the job's own backoff — also when it throws or answers
 * something else (reported to the worker's 'error' listeners).
 */
export function backoffDelayFor<T, R>(
  ctx: WorkerContext<T, R>,
  run: Run<T>,
  error: unknown,
): number | undefined {
  const strategy = ctx.settings.backoffStrategy;
  if (!strategy) return undefined;
  // No retry follows: the last attempt, or an error that says so (NonRetryableError).
  const job = run.job;
  const retryable = (error as { retryable?: unknown } | null)?.retryable !== false;
  if (job.attempt >= job.maxAttempts || !retryable) return undefined;
  let ms: unknown;
  try {
    ms = strategy(job.attempt, error, job as never);
  } catch (e) {
    ctx.report(
      new WorkQueueError(
        'BAD_STATE',
        `backoffStrategy threw (job ${run.job.id}): ${errorMessage(e)}`,
      ),
    );
    return undefined;
  }
  if (ms === undefined) return undefined;
  if (typeof ms === 'number' && ms >= 0 && ms <= MAX_DELAY_MS) return Math.round(ms);
  ctx.report(
    new WorkQueueError(
      'INVALID_ARGUMENT',
      `backoffStrategy returned ${String(ms)} for job ${run.job.id}: ms 0..${MAX_DELAY_MS} or undefined expected; the job's backoff applies`,
    ),
  );
  return undefined;
}
