/** What run.ts and child.ts say to each other (argv, the result line, IPC messages). */
import type { LibName } from './libs/types.js';

/**
 * What a child measures:
 * - `add`: jobs/s adding one job at a time, each awaited;
 * - `addBulk`: jobs/s adding `bulkSize` jobs per call, each call awaited;
 * - `process`: jobs/s of ONE worker process over `n` pre-added jobs, from the first handler call
 *   to the last completion — worker start-up excluded for every library, reported separately
 *   (with `procs` > 1 the orchestrator coordinates several such children);
 * - `latency`: add → handler start of an idle worker, `samples` times, `spacingMs` apart;
 * - `bytes`: Redis `used_memory` growth per waiting job over `n` added jobs;
 * - `addConcurrent`: jobs/s of `callers` concurrent callers on one producer, each awaiting its
 *   own add in a loop, `n` jobs in all (rows/concurrent-add.ts);
 * - `firstJob`: ms from starting a worker, one job waiting, to its handler call; `samples`
 *   times, each on a fresh queue (rows/first-job.ts);
 * - `memory`: RSS growth and start-up time of `workers` idle workers, each on its own queue
 *   (rows/memory.ts);
 * - `scale`: addBulk, then lease+complete (`drain`) of `n` jobs, and Redis bytes per waiting
 *   job (rows/scale.ts);
 * - `sandbox`: tiny jobs/s in-process, in a pool of threads, in a pool of processes, and the
 *   start-up of such pools (rows/sandbox.ts).
 * - `flows`: flows of 1 parent + 10 children per second, end to end (rows/flows.ts).
 */
export type ChildKind =
  | 'add'
  | 'addBulk'
  | 'process'
  | 'latency'
  | 'bytes'
  | 'addConcurrent'
  | 'firstJob'
  | 'memory'
  | 'scale'
  | 'sandbox'
  | 'groups'
  | 'fairness'
  | 'flows';
export const CHILD_KINDS: readonly ChildKind[] = [
  'add',
  'addBulk',
  'process',
  'latency',
  'bytes',
  'addConcurrent',
  'firstJob',
  'memory',
  'scale',
  'sandbox',
  'groups',
  'fairness',
  'flows',
];

export interface ChildParams {
  host: string;
  port: number;
  /** Jobs measured (process: in total, over all worker processes). */
  n: number;
  /** Untimed jobs (or latency samples) first, in the same process: JIT warm-up. */
  warmup: number;
  /**
   * Throughput kinds (add, addBulk, addConcurrent, process): the warm-up is repeated, `warmup`
   * jobs a round, until this many ms have passed since it began (the same time for every
   * library: a library that batches runs its per-call code once per batch, not per job).
   */
  warmupMs: number;
  concurrency: number;
  /** 0: the payload is `{"i":n}`; else it is padded to about this many bytes of JSON. */
  payloadBytes: number;
  /** Jobs per addBulk call (addBulk, and pre-adding / filling for the other kinds). */
  bulkSize: number;
  /** Mixed workload: job i fails its first attempt when i % failEvery === 0 (0: never). */
  failEvery: number;
  samples: number;
  spacingMs: number;
  /** process: how many worker processes take part, and which one this is (0 fills the queue). */
  procs: number;
  index: number;
  /** Give up (and fail) after this long. */
  timeoutMs: number;
  /** addConcurrent: concurrent callers. */
  callers?: number;
  /** memory: idle workers started (each on its own queue, at `concurrency`). */
  workers?: number;
  /** true: completed jobs are kept, the newest 1 000 for a day (rows/keep-completed.ts). */
  keepCompleted?: true;
  /** groups: active groups the grouped run spreads its jobs over. */
  groups?: number;
}

export interface ChildResult {
  ok: true;
  lib: LibName;
  kind: ChildKind;
  /** The figure: jobs/s (add, addBulk, process), µs p50 (latency), bytes/job (bytes). */
  value: number;
  jobs?: number;
  seconds?: number;
  /** process: wall-clock ms (performance.timeOrigin + now) of the first handler call / last completion. */
  startAt?: number;
  lastAt?: number;
  /** process: from worker start to the first handler call (connecting, registering, ...). */
  firstJobMs?: number;
  failedAttempts?: number;
  /** process, single worker process: Redis commands per completed job (incl. inside Lua). */
  commandsPerJob?: number;
  /** process, single worker process: Redis socket reads (≈ client round trips) per job. */
  readsPerJob?: number;
  /** process, single worker process: calls per command, per job (the biggest ones). */
  commandMix?: Record<string, number>;
  p50Us?: number;
  p99Us?: number;
  meanUs?: number;
  maxUs?: number;
  /** bytes: used_memory minus client buffers, per job. */
  datasetBytesPerJob?: number;
  /** firstJob: every sample (ms), in order. */
  samplesMs?: number[];
  /** memory: ms from the first worker's start until every worker ran its first job. */
  startMs?: number;
  /** memory: growth over the baseline (same process, libraries loaded, before any worker). */
  rssDeltaBytes?: number;
  heapDeltaBytes?: number;
  /** memory: whether a GC ran before each reading (`--expose-gc`). */
  gc?: boolean;
  /** scale: add (addBulk) jobs/s, lease+complete jobs/s, Redis used_memory per waiting job. */
  addPerSec?: number;
  drainPerSec?: number;
  bytesPerJob?: number;
  /** sandbox: jobs/s per handler placement, and ms to start a pool (rows/sandbox.ts). */
  sandbox?: {
    inProcessPerSec: number;
    threadPerSec: number;
    processPerSec: number;
    threadStartMs: number;
    processStartMs: number;
  };
  /** groups: c=50 jobs/s ungrouped and over `groups` active groups (same run), their ratio. */
  ungroupedPerSec?: number;
  groupedPerSec?: number;
  groupedRatio?: number;
  /** groups: the same, ungrouped jobs with a name each (metadata without a group). */
  namedPerSec?: number;
  /** groups: Redis used_memory per waiting grouped job. */
  groupedBytesPerJob?: number;
}

export interface ChildFailure {
  ok: false;
  lib: string;
  kind: string;
  error: string;
}

/** IPC, multi-process `process` runs only. */
export type ChildMessage = { type: 'ready' } | { type: 'count'; completed: number };
export type ParentMessage = { type: 'go' } | { type: 'stop' };
