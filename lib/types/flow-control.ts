/** Types of flow control and listings (`WorkQueue.pause`, `setRateLimit`, `getJobs`, …). */

/** At most `max` leases (job starts) in any `durationMs` of Redis time, across the queue. */
export interface RateLimit {
  max: number;
  durationMs: number;
}

/** The queue's flow control settings as stored in Redis (`WorkQueue.flowState()`). */
export interface FlowState {
  paused: boolean;
  rateLimit: RateLimit | null;
  /** Most jobs leased at once across the queue; null when unlimited. */
  globalConcurrency: number | null;
  /** Redis time (ms) until which a `RateLimitError` stops all leasing; 0 when not. */
  rateLimitedUntil: number;
}

// ---------------------------------------------------------------- listings

/** The states `getJobs` lists (`completed`: the kept completed jobs, newest first). */
export type ListState =
  'pending' | 'delayed' | 'leased' | 'dead' | 'waiting-children' | 'completed';

export interface PageOptions {
  /** Position of the first job of the page (0-based). Default 0. */
  offset?: number;
  /** Jobs per page, 1..1000. Default 100. */
  limit?: number;
  /** `getJobs('pending')` only: the pending jobs of this group (docs/groups.md). */
  group?: string;
}
