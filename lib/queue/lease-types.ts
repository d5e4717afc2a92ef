/** The shapes of the lease holders' calls (lib/queue/leases.ts): batches, items, replies. */
import type { LogBatch } from '../job/logs.js';
import type { FailOutcome, Lease, LeasedJob } from '../types/index.js';

/** One batch of leased jobs plus what a worker needs to wait well. */
export interface LeaseBatch<T> {
  jobs: LeasedJob<T>[];
  /** Redis time when the batch was leased. */
  now: number;
  /**
   * When to look again (Redis ms): the next delayed job's due time, or, when flow control
   * (rate limit, `RateLimitError`) allowed fewer jobs, the next time it allows one; -1 when none
   * (wait for a wake-up: a slot freeing under global concurrency, an add, a resume), 0 when not
   * looked up (full batch).
   */
  nextDue: number;
  /**
   * A suspect job (its last worker died while it ran beside others) waits to run alone: the
   * worker should finish what it holds, lease nothing meanwhile, then lease again.
   */
  drain: boolean;
  /**
   * The queue is paused (`WorkQueue.pause()`): its pause version (each pause or resume makes a
   * newer one), else 0. Nothing was leased.
   */
  paused: number;
}

export interface CompleteItem<R = unknown> {
  lease: Lease;
  result?: R;
  /** `result` already encoded (the Worker encodes it once, when it checks it can be stored). */
  encoded?: string;
  /** Log lines of the attempt not sent yet (`job.log`, lib/job/logs.ts), kept with the job. */
  logs?: LogBatch;
}

/** How a failed attempt was recorded (the Worker's fail). */
export interface FailRecord {
  outcome: FailOutcome;
  /** Redis time of the fail (undefined when the lease was lost). */
  at?: number;
}

/** What a Worker adds to `completeAndLease` (see lib/scripts/complete_and_lease.lua). */
export interface WorkerCallOptions {
  /** The calling worker (a call with no complete, adoption nor lease names it by nothing else). */
  workerId?: string;
  /** Mark the worker parked for this long when the lease comes back short (0: do not)… */
  parkMs?: number;
  /** …of fewer than this many jobs (its free slots: room to prefetch alone does not park it). */
  parkBelow?: number;
  /** Hand-off leases popped from the wake list by `waitForWork`, to take over first. */
  adopt?: readonly Lease[];
  /** The worker's idle wait moved entries into its hand-off list since its last call. */
  sweep?: boolean;
  /** Lease length of adopted jobs when nothing is leased in the same call. */
  leaseMs?: number;
  /**
   * Lease by reference: the script replies without the payloads and they are read here with
   * HMGET, sent as soon as the reply names the jobs (large payloads: a payload copied through
   * Lua costs Redis ~1 µs per KB, hashed whole, and again on its way out).
   */
  byRef?: boolean;
  /**
   * A complete of a job this worker completed already (kept: its record names the worker)
   * answers true: the re-send of a call whose reply was lost (a dropped connection, a failover).
   * The Worker's own calls; a `complete()` by hand answers true once.
   */
  ownResends?: boolean;
  /**
   * The leased jobs keep their payloads as stored (Buffers) beside their data, so that a
   * `Worker` can let a finished run's data go before its outcome is answered (lib/worker/job.ts).
   */
  keepRaw?: boolean;
}

export type CompleteReply<T> = {
  completed: boolean[];
  adopted: boolean[];
  /** Bytes of the payloads of `jobs` (for `byRef`'s choice). */
  payloadBytes: number;
  /**
   * A lease by reference whose payloads could not be read: the jobs it leased are ours in Redis
   * but not in `jobs` (the Worker reconciles: they go back).
   */
  lostJobs: boolean;
} & LeaseBatch<T>;
