/**
 * The common interface every benchmarked library is driven through (see ours.ts, bullmq.ts,
 * bee.ts). An adapter only translates; all timing is done by test/bench/child.ts.
 */

export const LIBS = ['ours', 'bullmq', 'bee', 'bare', 'fused'] as const;
export type LibName = (typeof LIBS)[number];

/** The floors: what Redis allows at best for a list queue (libs/bare.ts, libs/fused.ts). */
export const FLOORS: readonly LibName[] = ['bare', 'fused'];

export const LIB_LABELS: Record<LibName, string> = {
  ours: 'ours',
  bullmq: 'BullMQ',
  bee: 'Bee-Queue',
  bare: 'bare list',
  fused: 'fused Lua list',
};

/** The key of each library in a result row (`beeQueue` for Bee-Queue, kept from before). */
export const ROW_KEYS = {
  ours: 'ours',
  bullmq: 'bullmq',
  bee: 'beeQueue',
  bare: 'bare',
  fused: 'fused',
} as const satisfies Record<LibName, string>;
export type RowKey = (typeof ROW_KEYS)[LibName];

/** A job's payload: `{"i":n}`, plus padding for the payload-size figures. */
export interface JobData {
  i: number;
  pad?: string;
}

export interface AdapterConfig {
  host: string;
  port: number;
  /**
   * Mixed workload: jobs may fail once and must then be retried at once (ours: maxAttempts 2,
   * fixed backoff 0; BullMQ: attempts 2, fixed backoff 0; Bee-Queue: retries(1), immediate).
   */
  retries: boolean;
  /**
   * The keep row: every library keeps the newest 1 000 completed jobs for a day (ours: its
   * default; BullMQ: removeOnComplete { count: 1000, age: 1 day }). Else none keeps any (ours:
   * `keepCompleted: false`; BullMQ removeOnComplete; Bee-Queue removeOnSuccess).
   */
  keepCompleted: boolean;
}

export interface Producer {
  /** Resolves once connected (so that connecting is never timed). */
  ready(): Promise<void>;
  /** Add one job (one `add` / `createJob().save()` call). */
  add(data: JobData): Promise<void>;
  /**
   * Add many jobs in one call (`addBulk` / `saveAll`). `groupOf`: each job's group, for the
   * libraries that have groups (ours; the others add the jobs ungrouped: rows/groups.ts);
   * `named`: ours gives each job a name instead (metadata without a group, the reference).
   */
  addBulk(
    data: readonly JobData[],
    groupOf?: (d: JobData) => string,
    named?: boolean,
  ): Promise<void>;
  close(): Promise<void>;
}

export interface ConsumeOptions {
  concurrency: number;
  /**
   * Jobs a worker may hold leased beyond its free slots (ours: the `prefetch` option; the others
   * take a job only for a free slot). Default: each library's own.
   */
  prefetch?: number;
  /** The job handler; throwing fails the attempt. `firstAttempt` is false on a retry. */
  handler: (data: JobData, firstAttempt: boolean) => void | Promise<void>;
  /** Called once per job whose success the library has recorded in Redis. */
  onCompleted: () => void;
  /** Called once per failed attempt the library has recorded in Redis. */
  onFailed?: () => void;
  /** Errors the library reports (connection trouble, ...). */
  onError: (error: unknown) => void;
}

export interface Consumer {
  close(): Promise<void>;
}

export interface Adapter {
  readonly lib: LibName;
  /** A producer on `queue`, with its own connection(s). */
  producer(queue: string): Promise<Producer>;
  /** Start ONE worker on `queue` (its own connections), processing at once. */
  consumer(queue: string, opts: ConsumeOptions): Promise<Consumer>;
  /**
   * Scale figure only (libraries with a direct lease/complete call): take and complete every
   * waiting job of `queue`, `batch` per call, one call at a time. Resolves the count.
   */
  drain?(queue: string, batch: number): Promise<number>;
}

/** What the orchestrator prints about a library: its version and every option it is given. */
export interface LibDescription {
  lib: LibName;
  label: string;
  versions: Record<string, string>;
  options: Record<string, string>;
}
