/** Types of a queue's history (docs/history.md): kept completed jobs, logs, metrics, workers. */

/**
 * Which completed jobs a queue keeps (`WorkQueueOptions.keepCompleted`): the newest `count`, none
 * older than `ageMs` (ms since it completed). A kept job keeps its data, name, times, result and
 * log; `getJobs('completed')` lists them.
 */
export interface KeepCompleted {
  /** Most kept completed jobs, a positive integer. */
  count: number;
  /** Longest a completed job is kept, ms (a positive integer). */
  ageMs: number;
}

/** A page of a job's log (`getJobLogs`), oldest line first. */
export interface JobLogs {
  /** The page's lines. */
  lines: string[];
  /** Lines the job's log holds (at most `maxLogLines`). */
  count: number;
  /** Lines dropped by the cap (the oldest go first). */
  dropped: number;
}

/** What `getMetrics` counts per minute. */
export type MetricsKind = 'completed' | 'failed' | 'dead';

/** Per-minute counts of one kind (`getMetrics`). */
export interface Metrics {
  /** Minutes with a count, oldest first; `at` is the minute's start (Redis ms). */
  perMinute: Array<{ at: number; count: number }>;
  /** Sum of the counts in the window. */
  total: number;
}

/** The window of `getMetrics`: Redis ms, default the last 24 hours (all that is kept). */
export interface MetricsOptions {
  sinceMs?: number;
  untilMs?: number;
}

/** A registered worker (`getWorkers`), from the registry the heartbeats keep. */
export interface WorkerInfo {
  /** The worker's id in the queue's registry. */
  id: string;
  /** Its host (`os.hostname()`), '' when not known. */
  host: string;
  /** Its process id, 0 when not known. */
  pid: number;
  /** The `name` worker option, when given. */
  name?: string;
  /** Its `concurrency`, 0 when not known. */
  concurrency: number;
  /** Jobs it holds: running, and leased ahead of a free slot (prefetch). */
  running: number;
  /** When it registered (Redis ms), 0 when not known. */
  startedAt: number;
  /** Its last heartbeat (Redis ms); a worker silent for `heartbeatTimeoutMs` is reclaimed. */
  lastBeatAt: number;
}
