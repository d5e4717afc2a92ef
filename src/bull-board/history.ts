// What the board shows of a queue's history (docs/history.md): per-minute metrics in BullMQ's
// shape, the registered workers as the board lists connections, a job's log lines.
import type { QueueMetrics, QueueWorker } from '@bull-board/api/dist/types.js';
import type { Metrics, WorkerInfo, WorkQueue } from '../../lib/internal.js';
import { WorkQueueError } from '../../lib/internal.js';

const MINUTE = 60_000;
/** Most log lines the board's Logs tab gets (the newest; `maxLogLines` caps what is kept). */
export const BOARD_LOG_LINES = 1000;

/**
 * Our per-minute counts as BullMQ's metrics: one point per minute up to the newest (newest first,
 * zeros for quiet minutes), `start..end` indexes into them as BullMQ's `getMetrics` takes.
 */
export function boardMetrics(m: Metrics, nowMs: number, start = 0, end = -1): QueueMetrics {
  const newest = Math.floor(nowMs / MINUTE) * MINUTE;
  const oldest = m.perMinute.length ? Math.min(m.perMinute[0]!.at, newest) : newest;
  const points = Math.floor((newest - oldest) / MINUTE) + 1;
  const all = new Array<number>(points).fill(0);
  for (const { at, count } of m.perMinute) {
    const i = Math.floor((newest - at) / MINUTE);
    if (i >= 0 && i < points) all[i]! += count;
  }
  const from = Number.isSafeInteger(start) && start >= 0 ? start : 0;
  const to = Number.isSafeInteger(end) && end >= 0 ? Math.min(end, points - 1) : points - 1;
  const data = all.slice(from, to + 1);
  return {
    meta: { count: m.total, prevTS: newest, prevCount: all[0] ?? 0 },
    data,
    count: data.length,
  };
}

/** A registered worker as the board lists a connection (no address: host and pid instead). */
export function boardWorker(w: WorkerInfo, nowMs: number): QueueWorker {
  return {
    id: w.id,
    name: w.name ?? null,
    addr: w.pid ? `${w.host || 'unknown host'} pid ${w.pid}` : w.host || 'unknown',
    age: w.startedAt > 0 ? Math.max(0, Math.round((nowMs - w.startedAt) / 1000)) : 0,
  };
}

/** The newest log lines of job `id`, oldest first; none when the job is gone. */
export async function boardLogs(queue: WorkQueue, id: string): Promise<string[]> {
  if (typeof id !== 'string' || id.length === 0 || id.length > 256) return [];
  try {
    const head = await queue.getJobLogs(id, { limit: 1 });
    const offset = Math.max(0, head.count - BOARD_LOG_LINES);
    return (await queue.getJobLogs(id, { offset, limit: BOARD_LOG_LINES })).lines;
  } catch (e) {
    if (e instanceof WorkQueueError && e.code === 'NOT_FOUND') return [];
    throw e;
  }
}
