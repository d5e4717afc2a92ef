/**
 * The history layer of `WorkQueue` (docs/history.md): logs, per-minute metrics, the workers,
 * kept completed jobs (purge, rerun) and step jobs (update a job's data, change its delay).
 * See work-queue.ts.
 */
import type {
  JobLogs,
  Metrics,
  MetricsKind,
  MetricsOptions,
  PageOptions,
  WorkerInfo,
} from '../types/index.js';
import { PAGE } from './listings.js';
import { QueueBase } from './queue-base.js';

export class QueueHistory<T = unknown, R = unknown> extends QueueBase<T, R> {
  /**
   * A page of a job's log (`job.log` lines, oldest first), live or kept completed; `count` lines
   * kept, `dropped` over the cap (`maxLogLines`). NOT_FOUND when no such job (or trimmed).
   */
  getJobLogs(id: string, opts?: PageOptions): Promise<JobLogs> {
    return this.history.getJobLogs(id, opts);
  }

  /**
   * Per-minute counts of `kind` over the last 24 hours (Redis time): completed jobs, failed
   * attempts that were retried, dead-lettered jobs. Minutes with a count only, oldest first;
   * `sinceMs`/`untilMs` narrow the window (a minute counts when it overlaps it: it ends after
   * `sinceMs` and starts at or before `untilMs`).
   */
  getMetrics(kind: MetricsKind, opts?: MetricsOptions): Promise<Metrics> {
    return this.history.getMetrics(kind, opts);
  }

  /** The registered workers (live ones, and dead ones until a `clean()` reclaims them). */
  getWorkers(): Promise<WorkerInfo[]> {
    return this.history.getWorkers();
  }

  /**
   * Replace the data of a waiting (pending or delayed) or dead-lettered job; it keeps its place.
   * False when no such job; BAD_STATE when it is leased (its handler may: `job.updateData`) or
   * completed; PAYLOAD_TOO_LARGE / ENCODE_FAILED when the data cannot be stored (nothing
   * changed).
   */
  updateData(id: string, data: T): Promise<boolean> {
    return this.history.updateData(id, data);
  }

  /**
   * Give a waiting job a new due time: `delay` ms from now, or a Date (Redis time). A time not in
   * the future makes it due now (a delayed job stays 'delayed', due, until the next lease or
   * clean() promotes it; a pending one stays in line). False when
   * no such job; BAD_STATE when it is leased, completed or dead-lettered.
   */
  changeDelay(id: string, delay: number | Date): Promise<boolean> {
    return this.history.changeDelay(id, delay);
  }

  /**
   * Run a kept completed job again: a new job (new incarnation) with its data, name and options,
   * added now at the back of its priority; resolves its public id (a caller id is taken over, even
   * within its dedupe window), or null when `id` is no kept completed job. BAD_STATE when its
   * id names a job that waits or runs, or a dead-lettered one (retryDead runs that again).
   */
  rerun(id: string): Promise<string | null> {
    return this.history.rerun(id);
  }

  /** Remove one kept completed job, or (no id) all of them, 1 000 per call. Resolves how many. */
  purgeCompleted(id?: string): Promise<number> {
    return this.history.purgeCompleted(id, PAGE);
  }
}
