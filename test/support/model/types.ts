/** Types and queue options of the model (test/support/model/model.ts). */
import type { Lease, LeasedJob } from '../../../lib/index.js';

export interface Payload {
  n: number;
}
export type Leased = LeasedJob<Payload>;
export type State = 'pending' | 'delayed' | 'leased' | 'dead' | 'waiting-children';

export interface ModelJob {
  /** Internal number: the incarnation. */
  seq: string;
  /** Public id: the caller id, or `seq`. */
  id: string;
  cid?: string;
  data: Payload;
  priority: number;
  state: State;
  attempts: number;
  maxAttempts: number;
  /** Fixed retry delay of this job (0: straight back to its list). */
  retryMs: number;
  /** delayed: due time. */
  due?: number;
  /** leased: the current lease and its deadline. */
  lease?: Lease;
  deadline?: number;
  progress?: unknown;
  /** Its lease lapsed while it ran beside others: it runs alone next (see lease_jobs). */
  suspect?: boolean;
  /** Redis ms: when added (read back: within `addedWithin`), when its last lease started. */
  addedAt?: number;
  addedWithin?: [number, number];
  startedAt?: number;
  /** The worker of its last attempt that did not complete (getJob's processedBy). */
  lastWorker?: string;
  /** Its group (test/support/model/groups.ts). */
  group?: string;
}

/** What one add entry asks for. */
export interface AddSpec {
  cid?: string;
  priority: number;
  delayMs?: number;
  maxAttempts?: number;
  retryMs: number;
  group?: string;
}

/** Queue options the model assumes (model.test.ts builds the queue with them). */
export const MODEL_QUEUE = {
  maxAttempts: 3,
  heartbeatTimeoutMs: 150,
  // No job is dead-lettered by lease expiries: see onLeaseLapsed.
  maxLeaseExpiries: 1000,
  // Caller ids free again at completion (the window is tested in core-add).
  dedupeWindowMs: 0,
  // A few kept completed jobs, so that completions trim (the age bound is tested in
  // history/kept.test.ts).
  keepCompleted: { count: 5, ageMs: 3_600_000 },
  backoff: { type: 'fixed' as const, delayMs: 0 },
};

export interface CleanCounts {
  promoted: number;
  reclaimed: number;
  deadWorkers: number;
  reclaimedFromWorkers: number;
}

/** What clean() reports of flows (its `flows`, zeros when absent). */
export interface FlowCleanCounts {
  notices: number;
  cancelled: number;
}
