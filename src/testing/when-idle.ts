// whenIdle(): wait, bounded, until a queue has nothing left to do.
import { within, WorkQueue, WorkQueueError, type QueueCounts } from '../../lib/internal.js';
import { checkPositiveMs, describe, invalidArgument, optionsProblems } from './checks.js';

export interface WhenIdleOptions {
  /** The longest wait, ms (a positive integer): past it, `whenIdle` rejects with `TIMEOUT`. */
  timeoutMs: number;
  /** How often the counts are read, ms. Default 20. */
  intervalMs?: number;
}

/** What `whenIdle` needs of a queue: a `WorkQueue` (of any payload type) has it. */
export interface IdleQueue {
  readonly name: string;
  counts(): Promise<QueueCounts>;
}

/**
 * Most pending entries whenIdle looks through (in one script, with the rest of the counts) to tell
 * those of cancelled or replaced jobs, which `counts().pending` counts until a lease skips them.
 */
const LOOK_MAX = 1000;

/**
 * A WorkQueue's counts for whenIdle (countsForIdle); the queue's own counts() for anything else:
 * a mock, a spied or overridden counts(), a WorkQueue of another copy of the package.
 */
function read(queue: IdleQueue): Promise<QueueCounts> {
  const plain = queue instanceof WorkQueue && queue.counts === WorkQueue.prototype.counts;
  return plain ? queue.countsForIdle(LOOK_MAX) : queue.counts();
}

const DEFAULT_INTERVAL_MS = 20;

/**
 * Resolves, with the counts it read, once the queue has no job pending, delayed, leased
 * (running, or fetched by a worker) or waiting for its children (a flow parent): every job added
 * so far has completed, been dead-lettered or cancelled. Reads its counts (one Lua script: a
 * consistent snapshot; a WorkQueue's tell the pending entries of cancelled jobs from jobs, see
 * `read`) every `intervalMs`. Rejects with `TIMEOUT` (the last counts in the message) when the
 * queue is still busy after `timeoutMs`, and with the queue's own error (e.g.
 * `REDIS_UNAVAILABLE`) when the counts cannot be read. A job that retries is delayed between
 * attempts, so it is waited for; a schedule keeps adding jobs, so a queue with one is never idle
 * for long.
 */
export async function whenIdle(queue: IdleQueue, options: WhenIdleOptions): Promise<QueueCounts> {
  const problems: string[] = [];
  const q = queue as Partial<IdleQueue> | null | undefined;
  if (typeof q !== 'object' || q === null || typeof q.counts !== 'function') {
    problems.push(`queue must be a WorkQueue, got ${describe(queue)}`);
  }
  problems.push(...optionsProblems(options, ['timeoutMs', 'intervalMs']));
  if (typeof options === 'object' && options !== null) {
    checkPositiveMs('timeoutMs', options.timeoutMs, problems);
    checkPositiveMs('intervalMs', options.intervalMs, problems, true);
  }
  if (problems.length > 0) throw invalidArgument('whenIdle', problems);

  const { timeoutMs, intervalMs = DEFAULT_INTERVAL_MS } = options;
  const deadline = Date.now() + timeoutMs;
  let last: QueueCounts | undefined;
  for (;;) {
    const counts = await within(read(queue), deadline - Date.now());
    if (counts === undefined) break; // the read itself outlived the deadline
    last = counts;
    // (A flow parent waiting for its children is work left too.)
    if (counts.pending + counts.delayed + counts.leased + (counts.waitingChildren ?? 0) === 0)
      return counts;
    const left = deadline - Date.now();
    if (left <= 0) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, left)));
  }
  const seen = last
    ? `${last.pending} pending, ${last.delayed} delayed, ${last.leased} leased, ${last.waitingChildren ?? 0} waiting for children`
    : 'no counts read in time';
  throw new WorkQueueError(
    'TIMEOUT',
    `whenIdle: queue "${queue.name}" not idle within ${timeoutMs} ms (last seen: ${seen})`,
  );
}
