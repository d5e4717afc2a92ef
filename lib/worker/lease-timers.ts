// When the lease loop looks again without being asked: after a failed call (a retry, backing off
// 50 ms → 2 s), when the next delayed job is due, and a busy worker's safety net; and the lease
// loop's estimate of Redis time.

import { MAX_TIMER_MS } from '../util/checks.js';

export class LeaseTimers {
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = 0;
  private dueTimer: NodeJS.Timeout | undefined;
  private dueAt = 0;

  /** `look`: what a timer runs (the lease loop's schedule). */
  constructor(private readonly look: () => void) {}

  /** A retry is waiting: the loop holds its calls until then. */
  get retrying(): boolean {
    return this.retryTimer !== undefined;
  }

  /** A call was answered: the next failure retries after the shortest delay again. */
  answered(): void {
    this.retryDelay = 0;
  }

  /** A call failed: look again after a delay twice the last (one retry waits at a time). */
  retryLater(): void {
    if (this.retryTimer) return;
    this.retryDelay = Math.min(2_000, Math.max(50, this.retryDelay * 2));
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.look();
    }, this.retryDelay);
  }

  /** Look again in `ms` (the earliest such request wins). */
  lookAgainAt(ms: number): void {
    // (A job due past the longest timer, ~24.8 days: looked at then, not at once.)
    const at = Date.now() + Math.min(Math.max(1, ms), MAX_TIMER_MS);
    if (this.dueTimer && this.dueAt <= at) return;
    clearTimeout(this.dueTimer);
    this.dueAt = at;
    this.dueTimer = setTimeout(() => {
      this.dueTimer = undefined;
      this.look();
    }, at - Date.now());
    this.dueTimer.unref();
  }

  /** No more retries nor looks at due jobs. */
  stop(): void {
    clearTimeout(this.retryTimer);
    clearTimeout(this.dueTimer);
  }
}

/** Redis time now (ms): a reply's Redis time, moved on by this process's monotonic clock. */
export class RedisClock {
  private at = 0;
  private local = 0;

  set(redisMs: number): void {
    this.at = redisMs;
    this.local = performance.now();
  }

  now(): number | undefined {
    return this.at > 0 ? this.at + (performance.now() - this.local) : undefined;
  }
}
