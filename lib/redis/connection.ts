/**
 * Connections the core opens besides the caller's client (duplicates with the same options), and
 * the reconnect options a queue's connection should have.
 */
import { Cluster, type Redis, type RedisOptions } from 'ioredis';

/** Longest pause between two reconnect attempts (RECONNECT_OPTIONS), before jitter. */
const RECONNECT_MAX_MS = 500;

/**
 * ioredis options that let a queue's connection resume soon after Redis is back (a restart, a
 * failover, a dropped connection): reconnect attempts 50 ms apart, then 100, 150… up to 500 ms
 * (plus up to 50 ms of jitter), instead of ioredis 6's default backoff (doubling up to 5 s, plus
 * up to 200 ms); and a Redis still loading its data (AOF, RDB) is asked again every 100 ms, not
 * after its own estimate of the load (a second at least, up to 10 s by default). The Nest module
 * gives them to the connections it creates; spread them into your own client's options
 * (`new Redis(url, { ...RECONNECT_OPTIONS })`). The core's own connections (a worker's blocking
 * wait and subscription) copy the client's options.
 */
export const RECONNECT_OPTIONS = {
  retryStrategy: (attempt: number): number =>
    Math.min(attempt * 50, RECONNECT_MAX_MS) + Math.floor(Math.random() * 50),
  maxLoadingRetryTime: 100,
} as const satisfies Partial<RedisOptions>;

/**
 * A new connection with the client's options (Cluster or not), plus `overrides` for each
 * connection (e.g. no re-sending of commands in flight when a connection drops).
 */
export function duplicate(
  c: Redis | Cluster,
  overrides: Partial<RedisOptions> = {},
): Redis | Cluster {
  if (c instanceof Cluster) {
    return c.duplicate(undefined, {
      redisOptions: { ...c.options.redisOptions, ...overrides },
    });
  }
  return c.duplicate(overrides);
}
