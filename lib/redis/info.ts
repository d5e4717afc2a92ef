/** What the queue needs to know of the Redis it runs on: version and eviction policy, from INFO. */
import type { Cluster, Redis } from 'ioredis';
import { bounded } from './bounded.js';
import { isCluster, sentinelWarning } from './connection.js';
import { redisError, WorkQueueError } from '../errors.js';
import type { QueueLogger } from '../types/index.js';

export interface RedisInfo {
  version: string;
  maxmemoryPolicy: string;
}

const MIN_REDIS = [6, 2] as const;

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

/** How long `infos()` retries a master lost to a failover, unless told: the default `commandTimeoutMs`. */
const RETRY_MS = 5_000;

/**
 * INFO of the Redis, or of every master of a Cluster (a keyless command would reach one random
 * node, and masters can be configured differently). Each master is asked directly, which the
 * Cluster client's own failover retries (`retryDelayOnFailover`) do not cover, and during a
 * failover ioredis still lists the master that died until the cluster has promoted its replica
 * and the slot map is reloaded. So when a master fails without an answer (connection closed or
 * refused), the slot map is reloaded and the masters it names are asked again, every
 * `retryDelayOnFailover`, for up to `retryMs` from the call; an error reply fails at once.
 * Callers bound the whole wait as well (`bounded()`).
 */
export async function infos(c: Redis | Cluster, retryMs = RETRY_MS): Promise<RedisInfo[]> {
  if (!isCluster(c)) return [parseInfo(await c.info())];
  const start = Date.now();
  const deadline = start + retryMs;
  await c.ping(); // connects, so that the masters are known (the client retries it on a failover)
  for (;;) {
    const masters = c.nodes('master');
    if (masters.length === 0) return [parseInfo(await c.info())];
    const answers = await Promise.allSettled(masters.map((n) => n.info()));
    const texts: string[] = [];
    const failed: Array<{ node: Redis; e: unknown }> = [];
    answers.forEach((a, k) => {
      if (a.status === 'fulfilled') texts.push(a.value);
      else failed.push({ node: masters[k]!, e: a.reason });
    });
    if (failed.length === 0) return texts.map(parseInfo);
    const reply = failed.find((f) => isReply(f.e));
    if (reply) throw reply.e;
    const delay = failoverDelay(c);
    if (Date.now() + delay >= deadline) {
      const { node, e } = failed[0]!;
      const msg = e instanceof Error ? e.message : String(e);
      const where = `master ${node.options.host}:${node.options.port}`;
      throw new Error(`${where}: ${msg} (still after ${Date.now() - start} ms)`, { cause: e });
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
    await refreshSlots(c, deadline - Date.now());
  }
}

/** An error reply of Redis (it answered), as opposed to a connection that failed. */
function isReply(e: unknown): boolean {
  return (e as { name?: unknown } | null)?.name === 'ReplyError';
}

/** The client's `retryDelayOnFailover` (ioredis: 100 ms), within 50 ms – 1 s. */
function failoverDelay(c: Cluster): number {
  const d = (c.options as { retryDelayOnFailover?: unknown } | undefined)?.retryDelayOnFailover;
  return typeof d === 'number' && d > 0 ? Math.min(Math.max(d, 50), 1_000) : 100;
}

/** Reload the slot map (and with it the masters), waiting at most `ms`. */
function refreshSlots(c: Cluster, ms: number): Promise<void> {
  if (typeof c.refreshSlotsCache !== 'function' || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    c.refreshSlotsCache(() => {
      clearTimeout(timer);
      resolve();
    });
  });
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
    all = await bounded(c, timeoutMs, `${what}: INFO`, () => infos(c, timeoutMs));
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
