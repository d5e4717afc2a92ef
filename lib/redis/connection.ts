/** Connections the core opens besides the caller's client: duplicates with the same options. */
import { Cluster, type Redis, type RedisOptions } from 'ioredis';

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
