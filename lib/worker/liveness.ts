// What a liveness probe reads of a Worker (nestjs-work-queue/health's isAlive()): whether Redis
// answers its lease loop, and whether its heartbeat beats from a thread. Durations are measured
// on this process's monotonic clock: they describe this process, not jobs (whose times come from
// Redis).
import { performance } from 'node:perf_hooks';

/**
 * The lease loop's complete-and-lease calls: since when one has gone unanswered. The clock starts
 * with the first call sent after the last answer and stops at the next answer, so a worker that
 * sends nothing (full, paused, idle-waiting after an answer) is never behind; one whose calls
 * fail or hang is behind from the first of them.
 */
export class LeaseProgress {
  private since: number | undefined;

  /** A call is on its way. */
  sent(): void {
    this.since ??= performance.now();
  }

  /** Redis answered a call. */
  answered(): void {
    this.since = undefined;
  }

  /** How long calls have gone unanswered (0: the last one was answered). */
  unansweredMs(now = performance.now()): number {
    return this.since === undefined ? 0 : Math.round(now - this.since);
  }
}

/** A worker as a liveness probe sees it (`Worker.liveness`). */
export interface WorkerLiveness {
  /**
   * The worker leases nothing by design now: it is paused (`worker.pause()`), its queue is
   * paused as far as it knows (`queue.pause()`), or it is closing.
   */
  readonly paused: boolean;
  /** How long its lease loop's calls have gone unanswered (0: the last one was answered). */
  readonly unansweredMs: number;
  /**
   * Where its beats come from: the shared thread (once its beats landed), or the main thread
   * (while the thread starts, after it died, or for good when none can start).
   */
  readonly heartbeat: 'thread' | 'main thread';
  /**
   * How long ago its heartbeat thread died without a replacement thread's beat since (0: none
   * died, or a replacement beats). Meanwhile it beats from the main thread.
   */
  readonly heartbeatLostMs: number;
}
