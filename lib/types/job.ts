/** Types of a job: adding it, its leases, its state, and the handle a handler gets. */

/** How a retried job waits before its next attempt. */
export interface BackoffOptions {
  /** `fixed`: always `delayMs`; `exponential`: `delayMs * 2^(attempt-1)`, capped by `maxDelayMs`. */
  type: 'fixed' | 'exponential';
  delayMs: number;
  maxDelayMs?: number;
  /**
   * 0..1: each delay is drawn at random between `delay * (1 - jitter)` and `delay`, so that jobs
   * that failed together do not all come back at once. Default 0.
   */
  jitter?: number;
}

export interface AddOptions {
  /** Caller id: dedupes while the job exists. Must contain a non-digit (numbers are generated ids). */
  id?: string;
  /** Job name (a Nest processor routes by it). */
  name?: string;
  /** 0 (highest) … 9 (lowest). Default 5. */
  priority?: number;
  /** Run no earlier than this many ms from now (Redis time). */
  delayMs?: number;
  /** Run no earlier than this time (compared with Redis time). */
  runAt?: Date | number;
  /** Overrides the queue's `maxAttempts` for this job. */
  maxAttempts?: number;
  /** Overrides the queue's `backoff` for this job. */
  backoff?: BackoffOptions;
  /** Caller-id window (needs `id`): see {@link DedupeOptions}. */
  dedupe?: DedupeOptions;
  /**
   * The job's group (a tenant, an account: a string of 1-256 bytes). Workers take jobs round
   * robin across the groups that have pending jobs, and the queue's `groups` limits hold per
   * group (docs/groups.md). Without it the job is ungrouped, as jobs have always been.
   */
  group?: string;
}

/**
 * A caller id's dedupe window: the id stays taken for `ttlMs` from this add (Redis time), even
 * after its job completed (throttle). With `replace`, an add of the id while its job still waits
 * (pending or delayed) replaces that job — payload, options, schedule — and restarts the window
 * (debounce); a job already leased is left alone and the add is ignored.
 */
export interface DedupeOptions {
  /** Window length in ms from this add; a positive integer. */
  ttlMs: number;
  /** Replace the id's waiting job instead of ignoring this add. Default false. */
  replace?: boolean;
}

export interface AddResult {
  id: string;
  /** false when a job with this caller id already exists (nothing was added). */
  added: boolean;
  /** true when this add replaced the waiting job of its caller id (`dedupe.replace`). */
  replaced?: true;
}

/** A worker's exclusive, time-limited claim on a job. */
export interface Lease {
  /** The queue's key base (`<prefix>:{<queue>}:`), to refuse leases of another queue. */
  readonly queueKey: string;
  /** Public job id: the caller id, or the generated number. */
  readonly id: string;
  /** Internal job number (the incarnation: a re-added caller id gets a new one). */
  readonly seq: string;
  /** Fencing token of this lease. */
  readonly token: string;
  /** Worker the lease belongs to ('0' when leased without a registered worker). */
  readonly workerId: string;
  /** Deadline, ms since epoch in Redis time. */
  deadline: number;
}

export interface LeasedJob<T = unknown> extends Lease {
  readonly data: T;
  readonly name: string | undefined;
  readonly priority: number;
  /** 1 for the first run; counts failed attempts, not lease expiries. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly leaseExpiries: number;
  readonly backoff: BackoffOptions;
  /** The trace context an add hook gave the job (see `AddHook`); undefined when none. */
  readonly traceContext?: string | undefined;
  /** When the job was added (Redis ms; 0 when not known). */
  readonly addedAt: number;
  /** When this lease started (Redis ms). */
  readonly startedAt: number;
  /** The job's group (`AddOptions.group`); undefined when ungrouped. */
  readonly group?: string | undefined;
  /** A flow child: its parent (its result goes there when it completes). */
  readonly parent?: ParentRef | undefined;
}

export interface LeaseOptions {
  /** Up to this many jobs. Default 1. */
  count?: number;
  /** Lease length. Default the queue's `leaseMs`. */
  leaseMs?: number;
  /** Registered worker id (from `registerWorker`), so a dead worker's leases are reclaimed early. */
  workerId?: string;
}

export type FailOutcome = 'retried' | 'dead' | 'lost';

/** `waiting-children`: a flow parent waiting for its children to end (docs/flows.md). */
export type JobState =
  'pending' | 'delayed' | 'leased' | 'dead' | 'completed' | 'waiting-children' | 'unknown';

/** How far a batch (or any flow parent) is: counts of its children. */
export interface ChildCounts {
  /** Not ended yet. */
  pending: number;
  completed: number;
  /** Dead-lettered or cancelled (with `onFailure` 'ignore', or the one that failed the parent). */
  failed: number;
  /** Cancelled because the parent failed first. */
  cancelled: number;
}

/** A flow child's parent: its queue and public id. */
export interface ParentRef {
  queue: string;
  id: string;
}

export interface JobInfo<T = unknown, R = unknown> {
  id: string;
  state: JobState;
  data?: T;
  name?: string;
  priority?: number;
  /** The job's group (`AddOptions.group`), when it has one. */
  group?: string;
  /** Attempts made: failed ones so far; for a completed job, those plus the one that completed. */
  attemptsMade?: number;
  leaseExpiries?: number;
  lastError?: string;
  /** For dead jobs: why. */
  deadReason?: string;
  /**
   * Due time (delayed), lease deadline (leased), death time (dead) or completion time
   * (completed and kept), ms in Redis time.
   */
  at?: number;
  progress?: unknown;
  /** For completed jobs: the result, when results are stored or the job is kept with one. */
  result?: R;
  /** When it was added (`add`, `addBulk`, a schedule tick, `rerun`), Redis ms. */
  addedAt?: number;
  /** When its current or last attempt's lease started, Redis ms (none before its first). */
  startedAt?: number;
  /** When it completed (kept) or was dead-lettered, Redis ms. */
  finishedAt?: number;
  /**
   * The worker id that runs (leased) or ran its last attempt (`getWorkers` lists live workers);
   * '0' for a lease taken without a worker (`lease()`).
   */
  processedBy?: string;
  /**
   * When the stored payload (or a kept result) cannot be decoded: what and its size, never its
   * bytes ('payload is not valid JSON (12 bytes)').
   */
  decodeError?: string;
  /** A flow child: its parent. */
  parent?: ParentRef;
  /** A flow parent: how far its children are (see docs/flows.md). */
  children?: ChildCounts;
}

export interface DeadJob<T = unknown> {
  id: string;
  data?: T;
  name?: string;
  /** The job's group, when it has one. */
  group?: string;
  reason: string;
  lastError?: string;
  attemptsMade: number;
  /** When it was dead-lettered, Redis ms. */
  diedAt: number;
  /** The same time as `diedAt` (the name `getJob` and `getJobs` give it). */
  finishedAt: number;
  /** When it was added, Redis ms. */
  addedAt?: number;
  /** When its last attempt's lease started, Redis ms. */
  startedAt?: number;
  /** The worker id that ran its last attempt. */
  processedBy?: string;
  decodeError?: string;
}

/** `fail()`'s options. */
export interface FailOptions {
  /** false: dead-letter at once. Default: the error's own `retryable`, else true. */
  retryable?: boolean;
  /** Wait this long (ms, an integer >= 0) before the retry, instead of the job's backoff. */
  delayMs?: number;
}

/** What a handler receives. */
export interface Job<T = unknown> {
  readonly id: string;
  /**
   * Its data. Once the handler succeeded (codecs 'json' and 'string'), read again from the stored
   * payload: a 'completed' listener gets the data as added (or as `updateData` stored it), not
   * the object the handler may have changed.
   */
  readonly data: T;
  readonly name: string | undefined;
  readonly priority: number;
  /** 1 for the first run; counts failed attempts. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly queueName: string;
  /** The trace context the job was added with (see `AddHook`); undefined when none. */
  readonly traceContext?: string | undefined;
  /** When the job was added (Redis ms; 0 when not known). */
  readonly addedAt: number;
  /** When this attempt's lease started (Redis ms). */
  readonly startedAt: number;
  /**
   * When this attempt's outcome was recorded (Redis ms): set before the worker's `completed`,
   * `failed`, `retried` and `dead` events; undefined before.
   */
  readonly finishedAt?: number;
  /** The job's group (`AddOptions.group`); undefined when ungrouped. */
  readonly group?: string | undefined;
  /** Aborts when the lease is lost, the job is cancelled, times out, or the worker closes. */
  readonly signal: AbortSignal;
  /** A flow child: its parent; undefined otherwise. */
  readonly parent?: ParentRef | undefined;
  /**
   * A flow parent: the results of its completed children, by child key `<queue>:<id>` (JSON
   * values, as each child's handler returned them); `{}` for a job without children.
   */
  getChildrenResults<R = unknown>(): Promise<Record<string, R>>;
  /**
   * A flow parent: the errors of its children that failed (`onFailure: 'ignore'`, and, run again
   * from the dead-letter set, the one that failed it), by child key `<queue>:<id>`.
   */
  getChildrenFailures(): Promise<Record<string, string>>;
  /** Record and publish progress; false when the lease is lost. */
  progress(value: unknown): Promise<boolean>;
  /**
   * Append a line to the job's log (`getJobLogs`), kept with the job. Lines travel with the
   * attempt's next lease renewal or its outcome (no round trip of their own); resolves true at
   * once, false when the lease is known to be lost (the line is dropped). A non-string is turned
   * into one (an Error: its message; anything else: JSON); a line over 2 KiB is cut there.
   */
  log(message: unknown): Promise<boolean>;
  /**
   * Replace the job's data (fenced by the lease: a step job's state for its next run, see
   * `DelayedError`); `job.data` is the new data once it resolves true; false when the lease is
   * lost (nothing changed). PAYLOAD_TOO_LARGE / ENCODE_FAILED when it cannot be stored.
   */
  updateData(data: T): Promise<boolean>;
  /** Push the lease deadline to now + ms; false when the lease is lost. */
  extend(ms?: number): Promise<boolean>;
  /**
   * "The remote API told me to wait": throws a `RateLimitError(ms)` — the job goes back to the
   * front without counting an attempt and the queue leases nothing for `ms`, taken as
   * RateLimitError takes it (rounded up, 1 ms to one day; Infinity one day; not a number: 1 s —
   * a missing Retry-After holds, it fails no attempt). For a grouped job only its group waits:
   * the front of its group, and other groups go on.
   */
  rateLimited(ms: number): never;
}
