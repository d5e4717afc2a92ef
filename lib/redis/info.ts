/** What the queue needs to know of the Redis it runs on: version and eviction policy, from INFO. */
import type { Cluster, Redis } from 'ioredis';
import { bounded } from './bounded.js';
import { sentinelWarning } from './connection.js';
import { redisError, WorkQueueError } from '../errors.js';
import type { QueueLogger } from '../types/index.js';

export interface RedisInfo {
  version: string;
  maxmemoryPolicy: string;
}

const MIN_REDIS = [6, 2] as const;

/** Duck-typed, so that a Cluster from another copy of ioredis is recognised too. */
export function isCluster(c: Redis | Cluster): c is Cluster {
  return (c as { isCluster?: unknown }).isCluster === true;
}

/** The fields we read from the text of INFO. */
export function parseInfo(text: string): RedisInfo {
  const field = (f: string) => new RegExp(`^${f}:(.*)$`, 'm').exec(text)?.[1]?.trim() ?? '';
  return { version: field('redis_version'), maxmemoryPolicy: field('maxmemory_policy') };
}

export function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] || 0) - (y[i] || 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * INFO of the Redis, or of every master of a Cluster (a keyless command would reach one random
 * node, and masters can be configured differently).
 */
export async function infos(c: Redis | Cluster): Promise<RedisInfo[]> {
  let texts: string[];
  if (isCluster(c)) {
    await c.ping(); // connects, so that the masters are known
    texts = await Promise.all(c.nodes('master').map((n) => n.info()));
    if (texts.length === 0) texts = [await c.info()];
  } else {
    texts = [await c.info()];
  }
  return texts.map(parseInfo);
}

/**
 * One summary for health checks: the lowest version, and the first policy other than
 * `noeviction` if any master has one.
 */
export function summarize(all: readonly RedisInfo[]): RedisInfo {
  const lowest = all.reduce((a, b) => (compareVersions(b.version, a.version) < 0 ? b : a));
  const risky = all.find((i) => i.maxmemoryPolicy !== 'noeviction');
  return { version: lowest.version, maxmemoryPolicy: (risky ?? lowest).maxmemoryPolicy };
}

/**
 * Refuse Redis < 6.2; warn when eviction can drop queue keys, or when a Sentinel client will not
 * follow a failover at once. Bounded by `timeoutMs`.
 */
export async function checkRedis(
  c: Redis | Cluster,
  what: string,
  timeoutMs: number,
  logger: QueueLogger | undefined,
): Promise<void> {
  let all: RedisInfo[];
  try {
    all = await bounded(c, timeoutMs, `${what}: INFO`, () => infos(c));
  } catch (e) {
    throw redisError(`${what}: cannot read Redis INFO`, e);
  }
  for (const { version, maxmemoryPolicy: policy } of all) {
    const [major = 0, minor = 0] = version.split('.').map(Number);
    if (major < MIN_REDIS[0] || (major === MIN_REDIS[0] && minor < MIN_REDIS[1])) {
      throw new WorkQueueError(
        'REDIS_VERSION',
        `${what}: Redis ${version || '(unknown)'} is too old; nestjs-work-queue needs Redis >= 6.2`,
      );
    }
    if (policy && policy !== 'noeviction') {
      logger?.warn(
        `${what}: Redis maxmemory-policy is '${policy}': under memory pressure Redis may evict queue keys and LOSE JOBS. Set maxmemory-policy noeviction.`,
      );
      break;
    }
  }
  const sentinel = sentinelWarning(c, what);
  if (sentinel) logger?.warn(sentinel);
}
