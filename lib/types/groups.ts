/** Types of job groups (`AddOptions.group`, the `groups` queue option; docs/groups.md). */
import type { RateLimit } from './flow-control.js';

/**
 * Limits every group of the queue gets by default (`queue.setGroupConcurrency` and
 * `setGroupRateLimit` override them per group). Written to Redis when the queue object first
 * talks to Redis, replacing the defaults stored there, like `limiter`.
 */
export interface GroupOptions {
  /**
   * Most jobs of one group leased at once, across every worker and process. Default unlimited;
   * `1` runs each group's jobs one at a time, in order (the next starts after the previous ended).
   */
  concurrency?: number;
  /** At most `max` leases of one group in any `durationMs` of Redis time. Default none. */
  limiter?: RateLimit;
}

/** One group as `getGroups` lists it. */
export interface GroupInfo {
  group: string;
  /** Jobs waiting in the group (delayed ones not included until they come due). */
  pending: number;
  /** Jobs of the group leased now (running, prefetched or handed off). */
  running: number;
  /** `pauseGroup` was called and not `resumeGroup` since. */
  paused: boolean;
  /** Held by its rate limit or a handler's `RateLimitError` now. */
  limited: boolean;
}
