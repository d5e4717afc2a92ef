/**
 * What the Cluster and Sentinel launchers (redis-cluster-nodes.ts, redis-cluster-topology.ts,
 * redis-sentinel.ts) share: finding a Redis binary that ships beside redis-server, and one-off
 * commands to one node by port.
 */
import path from 'node:path';
import { Redis } from 'ioredis';
import { findRedisServerBinary, firstExecutable, HOST } from '../../tools/redis-server.js';

/** Path of `name` (e.g. redis-cli): the env variable `envVar`, next to redis-server, or on PATH. */
export function findCompanionBinary(name: string, envVar: string): string | undefined {
  const candidates: string[] = [];
  const fromEnv = process.env[envVar];
  if (fromEnv) candidates.push(fromEnv);
  const server = findRedisServerBinary();
  if (server) candidates.push(path.join(path.dirname(server), name));
  for (const d of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    candidates.push(path.join(d, name));
  }
  return firstExecutable(candidates);
}

/**
 * Run `fn` on a short-lived plain connection to one node (a data node or a sentinel), which
 * gives up after `timeoutMs` and never retries.
 */
export async function onPort<X>(
  port: number,
  fn: (r: Redis) => Promise<X>,
  timeoutMs = 2_000,
): Promise<X> {
  const r = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
    enableReadyCheck: false,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}
