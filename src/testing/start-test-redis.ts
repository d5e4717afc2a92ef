// startTestRedis(): a Redis for a test run, the way the project's own tests get one.
import { WorkQueueError } from '../../lib/internal.js';
import { describe, invalidArgument, optionsProblems } from './checks.js';
import { acquireSharedRedis, RedisUnavailableError } from './redis-launcher.js';

/** A Redis for tests, from `startTestRedis()`. */
export interface TestRedis {
  /** Its URL, e.g. `redis://127.0.0.1:40123`. */
  readonly url: string;
  /** Where it came from: `REDIS_URL`, a Docker container (testcontainers), or a local `redis-server`. */
  readonly kind: 'env' | 'container' | 'binary';
  /**
   * Stop the container or the `redis-server` (and remove its temp dir); for `REDIS_URL`, do
   * nothing (that Redis is yours). Idempotent.
   */
  stop(): Promise<void>;
}

export interface StartTestRedisOptions {
  /** Where to say which Redis it picked, one line. Default: silent. */
  log?: (line: string) => void;
}

/**
 * A Redis for tests: `REDIS_URL` when set (it must answer PING: no fallback), else a `redis:7`
 * container when a Docker engine is reachable and `testcontainers` is installed (an optional
 * peer), else a local `redis-server` on a free port with its data in a temp dir. Rejects with
 * `REDIS_UNAVAILABLE`, naming the three options, when none of them works.
 */
export async function startTestRedis(options: StartTestRedisOptions = {}): Promise<TestRedis> {
  const problems = optionsProblems(options, ['log']);
  const log = (options as StartTestRedisOptions | null)?.log;
  if (log !== undefined && typeof log !== 'function') {
    problems.push(`options.log must be a function (line: string) => void, got ${describe(log)}`);
  }
  if (problems.length > 0) throw invalidArgument('startTestRedis', problems);
  let redis;
  try {
    redis = await acquireSharedRedis({ log: log ?? (() => undefined) });
  } catch (e) {
    if (!(e instanceof RedisUnavailableError)) throw e;
    throw new WorkQueueError('REDIS_UNAVAILABLE', `startTestRedis: ${e.message}`, e.problems, {
      cause: e,
    });
  }
  let stopping: Promise<void> | undefined;
  return {
    url: redis.url,
    kind: redis.kind,
    stop() {
      stopping ??= redis.dispose();
      return stopping;
    },
  };
}
