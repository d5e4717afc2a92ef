// The options of WorkQueueModule.forRoot(): connections, prefix, defaults, logger, shutdown,
// cleaner.
import type { LoggerService } from '@nestjs/common';
import type {
  Cluster,
  ClusterNode,
  ClusterOptions,
  Redis,
  RedisOptions,
  SentinelAddress,
} from 'ioredis';
import type { WorkerOptions, WorkQueueOptions } from '../../lib/internal.js';

/** Connect with a Redis URL (`redis://` or `rediss://`). The module owns the connection. */
export interface WorkQueueUrlConnection {
  url: string;
  redis?: never;
  client?: never;
  cluster?: never;
  sentinels?: never;
}

/** Connect with ioredis options. The module owns the connection. */
export interface WorkQueueRedisConnection {
  redis: RedisOptions;
  url?: never;
  client?: never;
  cluster?: never;
  sentinels?: never;
}

/** Use an existing ioredis client (or Cluster). The module never closes it. */
export interface WorkQueueClientConnection {
  client: Redis | Cluster;
  url?: never;
  redis?: never;
  cluster?: never;
  sentinels?: never;
}

/** Connect to a Redis Cluster. The module owns the connection. */
export interface WorkQueueClusterConnection {
  cluster: { nodes: ClusterNode[]; options?: ClusterOptions };
  url?: never;
  redis?: never;
  client?: never;
  sentinels?: never;
}

/**
 * Connect through Redis Sentinel: the sentinels' addresses, the master's name, and any other
 * ioredis options (`password`, `sentinelPassword`, `tls`…). The module owns the connection; it
 * and every connection opened from it follow the master when a failover moves it
 * (`SENTINEL_CLIENT_OPTIONS` are the defaults; yours win). `{ redis: { sentinels, name } }` works too.
 */
export type WorkQueueSentinelConnection = Omit<RedisOptions, 'sentinels' | 'name'> & {
  sentinels: Array<Partial<SentinelAddress>>;
  /** The master's name, as in the sentinels' `sentinel monitor <name> …`. */
  name: string;
  url?: never;
  redis?: never;
  client?: never;
  cluster?: never;
};

/** Exactly one way to reach Redis. */
export type WorkQueueConnectionOptions =
  | WorkQueueUrlConnection
  | WorkQueueRedisConnection
  | WorkQueueClientConnection
  | WorkQueueClusterConnection
  | WorkQueueSentinelConnection;

/** Queue options every registered queue starts from (the prefix and logger are module-wide). */
export type WorkQueueQueueDefaults = Omit<WorkQueueOptions, 'prefix' | 'logger'>;

/** Worker options every `@Processor()` starts from (`leaseMs` comes from the queue options). */
export type WorkQueueWorkerDefaults = Pick<
  WorkerOptions,
  'concurrency' | 'prefetch' | 'jobTimeoutMs' | 'idleTimeoutMs' | 'heartbeatIntervalMs'
>;

/** Defaults for queues and their workers; `registerQueue()` and `@Processor()` override them. */
export type WorkQueueDefaults = WorkQueueQueueDefaults & WorkQueueWorkerDefaults;

/**
 * The cleaner: `false` turns it off. `intervalMs` defaults to the smallest `heartbeatTimeoutMs`
 * or `leaseMs` of the registered queues, within 100..5 000 ms.
 */
export type WorkQueueCleanerOptions = false | { intervalMs?: number };

export interface WorkQueueModuleOptions {
  /** Exactly one of `{ url }`, `{ redis }`, `{ client }`, `{ cluster }`, `{ sentinels, name }`. */
  connection: WorkQueueConnectionOptions;
  /**
   * More connections, by name (`configKey`): `registerQueue({ name, configKey })` puts a queue
   * (its jobs, its worker) on one of them instead of `connection`.
   */
  connections?: Record<string, WorkQueueConnectionOptions>;
  /** Key prefix of every queue: `<prefix>:{<queue>}:<part>`. Default `wq`. */
  prefix?: string;
  /** Defaults of every queue and worker. */
  defaults?: WorkQueueDefaults;
  /** Where the module and its queues log. Default `new Logger('WorkQueue')`; `false` silences. */
  logger?: LoggerService | false;
  /** How long shutdown waits for running jobs before releasing them to the queue. Default 10 000 ms. */
  shutdownTimeoutMs?: number;
  /** The scheduled cleaner (reclaims expired leases and dead workers' jobs). Default on. */
  cleaner?: WorkQueueCleanerOptions;
  /**
   * Whether this instance runs the workers of its `@Processor()` classes: `true` (default) all,
   * `false` none (a producer-only instance: it adds jobs, opens no worker connection), or the
   * names of the queues whose workers it runs. Typically from an environment variable, so that
   * web and worker deployments run one codebase. `registerQueue({ name, workers })` overrides it
   * for one queue.
   */
  workers?: boolean | readonly string[];
}
