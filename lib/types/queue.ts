/** Types of a queue: its options, counts and the reports of clean() and repair(). */
import type { RateLimit } from './flow-control.js';
import type { KeepCompleted } from './history.js';
import type { GroupOptions } from './groups.js';
import type { BackoffOptions } from './job.js';

/** How payloads are stored: JSON (default), strings as given, or raw bytes. */
export type PayloadCodec = 'json' | 'string' | 'buffer';

export interface WorkQueueOptions {
  /** Key prefix; every key is `<prefix>:{<queue>}:<part>`. Default `wq`. */
  prefix?: string;
  /** Payload encoding. Default `json`. */
  codec?: PayloadCodec;
  /** Largest encoded payload accepted by `add`, in bytes. Default 512 KiB. */
  maxPayloadBytes?: number;
  /** Lease length when `lease()` is not given one. Default 30 000 ms. */
  leaseMs?: number;
  /** Attempts (handler runs that fail) before a job is dead-lettered. Default 3. */
  maxAttempts?: number;
  /** Delay between attempts. Default exponential from 1 000 ms, capped at 60 000 ms. */
  backoff?: BackoffOptions;
  /** Lease expiries (crashes, timeouts) before a job is dead-lettered. Default 3. */
  maxLeaseExpiries?: number;
  /** Dead-letter set size; the oldest are purged past it. Default 10 000. */
  maxDead?: number;
  /**
   * Keep handler results by job id for `ttlMs` (read them with `getResult`/`waitForResult`,
   * also after a kept completed job was trimmed). Default off. See docs/history.md for how it
   * relates to `keepCompleted`.
   */
  storeResults?: false | { ttlMs: number };
  // ---------------------------------------------------------------- history (docs/history.md)
  /**
   * Keep completed jobs (data, name, times, result, log) for `getJob` and
   * `getJobs('completed')`: the newest `count`, none older than `ageMs`. Trimmed by the calls
   * that complete jobs and by `clean()`. Default `{ count: 1000, ageMs: 86_400_000 }`; `false`:
   * a completed job is removed at once.
   */
  keepCompleted?: KeepCompleted | false;
  /**
   * Most lines a job's log keeps (`job.log`); past it the oldest go (`getJobLogs` says how many).
   * Default 100; 0 turns logs off (`job.log` then keeps nothing).
   */
  maxLogLines?: number;
  /**
   * A worker whose heartbeat is older than this is dead; `clean` reclaims its jobs. Default
   * 2 000 ms (heartbeats come every quarter of it from a thread, so a busy event loop does not
   * count as dead).
   */
  heartbeatTimeoutMs?: number;
  /**
   * Longest wait of any queue operation: while Redis is unreachable it rejects with
   * `REDIS_UNAVAILABLE` after this long (without sending anything, when the connection never came
   * back), whatever the client's retry options. Default 5 000 ms.
   */
  commandTimeoutMs?: number;
  /**
   * How long a caller id stays taken after its job completed: an `add` with that id within the
   * window resolves `{ added: false }` (so "add twice" runs once even when the first already
   * finished). 0 frees the id at completion. Default 60 000 ms.
   */
  dedupeWindowMs?: number;
  /** Where warnings go (eviction policy, ...). Default `console`. `false` silences them. */
  logger?: QueueLogger | false;
  /**
   * Replicas that must confirm an `add`/`addBulk` (also `upsertSchedule`, and a FlowProducer's
   * adds when its options say so) before it resolves. Default 0: resolve as soon
   * as the master ran it. Redis replicates asynchronously: when a master dies (Cluster failover,
   * Sentinel) the adds it acknowledged but had not yet sent to its replica are gone from the
   * promoted replica — the one way an acknowledged job can be lost. With `replicaAcks: n` the
   * add script is followed, in one pipeline on the same connection (in a Cluster: to the node
   * that serves the queue's slot), by `WAIT n replicaAckTimeoutMs`; concurrent adds of the queue
   * share one WAIT (group commit). When fewer than `n` replicas confirm in time the add rejects
   * with `NOT_REPLICATED`: the job IS stored on the master and runs unless a failover loses it;
   * add it again with the same caller `id` to retry without a duplicate. A confirmed add
   * survives the death of its master when the promoted replica is one that confirmed (with one
   * replica per master, always); WAIT is not consensus, so with more replicas than `n` that is
   * likely (Redis promotes the most up-to-date replica) but not certain.
   *
   * Cost: a replica round trip per add (sequential adds on a local cluster: ~0.7 → ~1.5 ms);
   * WAIT holds its connection meanwhile, so other commands on the same client (e.g. a worker's
   * completes) queue behind it — for up to the timeout while a replica lags or is down: give
   * producers their own client when that matters. Other writes (lease, complete, fail, cancel)
   * are never waited for: losing one of those makes a job run again or come back, not vanish.
   */
  replicaAcks?: number;
  /** How long an add waits for `replicaAcks` replicas, in ms. Default 1 000. */
  replicaAckTimeoutMs?: number;
  /**
   * Rate limit for the whole queue (every worker, every process): at most `max` leases in any
   * `durationMs` of Redis time (docs/flow-control.md). Written to Redis when this queue object
   * first talks to Redis, replacing what was set there (`setRateLimit` changes it at run time).
   */
  limiter?: RateLimit;
  /**
   * Per-group limits of grouped jobs (`add(data, { group })`): see {@link GroupOptions} and
   * docs/groups.md. Jobs may have groups without it (fair round robin, no limits).
   */
  groups?: GroupOptions;
  // ---------------------------------------------------------------- events (lib/events/)
  /**
   * The queue's event log (a Redis stream read by `QueueEvents` and `waitForResult`), written
   * by the scripts that change a job's state. `maxLen`: its approximate cap (entries; one entry
   * may name several jobs of one call). Default `{ maxLen: 10 000 }`; `false`: no log at all.
   */
  events?: { maxLen?: number } | false;
}

export interface QueueLogger {
  warn(message: string): void;
  error?(message: string): void;
  log?(message: string): void;
  debug?(message: string): void;
}

export interface QueueCounts {
  /**
   * Pending jobs per priority 0..9, grouped ones included (cancelled ungrouped jobs count until a
   * lease skips them).
   */
  pendingByPriority: number[];
  pending: number;
  delayed: number;
  leased: number;
  dead: number;
  /** Workers whose heartbeat is fresh. */
  workers: number;
  /** Kept completed jobs (`keepCompleted`). */
  completed: number;
  /** Flow parents waiting for their children. */
  waitingChildren: number;
}

export interface CleanReport {
  promoted: number;
  /** Expired leases put back. */
  reclaimed: number;
  /** Jobs dead-lettered for too many lease expiries. */
  deadLettered: number;
  /** Dead workers whose leases were reclaimed. */
  deadWorkers: number;
  /** Jobs reclaimed from dead workers. */
  reclaimedFromWorkers: number;
  resultsExpired: number;
  /** Caller ids of completed jobs freed at the end of their dedupe window. */
  callerIdsFreed: number;
  /** Kept completed jobs trimmed (past `keepCompleted`'s age, or its count when lowered). */
  completedTrimmed: number;
  /** Schedule ticks made (as delayed jobs) by this clean; present only when some were. */
  ticksMade?: number;
  /**
   * Flow work left over by crashes and delivered by this clean (docs/internals/flows.md):
   * notices delivered to parents, children cancelled; present only when there was some.
   */
  flows?: FlowCleanReport;
}

/** What clean() or repair() did for flows. */
export interface FlowCleanReport {
  /** Children's notices delivered to their parents (first and second deliveries). */
  notices: number;
  /** Children of failed or cancelled parents cancelled. */
  cancelled: number;
  /** Reservations of flow adds that never wrote (their producer died) dropped. */
  reservationsDropped: number;
}

export interface RepairReport {
  /** Job ids checked as suspects. */
  checked: number;
  /** One entry per fixed job: `<id>: <what was wrong>`. */
  fixes: string[];
  /** Pending-list entries of cancelled jobs dropped on the way (normal, not a fix). */
  tombstones: number;
}
