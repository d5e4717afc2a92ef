/**
 * The Redis launcher for the project's own runs: the launcher of the package's testing kit
 * (src/testing/redis-launcher.ts, its one home), plus the apt-get step of a fresh machine.
 * `acquireSharedRedis` here installs redis-server with apt-get when it is missing (as root on a
 * Debian-like machine); the package's own never installs anything.
 */
import {
  acquireSharedRedis as acquire,
  type AcquireSharedRedisOptions,
  type SharedRedis,
} from '../src/testing/redis-launcher.js';
import { installRedisServer } from './apt-install.js';

export * from '../src/testing/redis-launcher.js';
export { aptInstall, installRedisServer } from './apt-install.js';

/** One Redis for a whole run (REDIS_URL → Docker → local redis-server, installed if missing). */
export function acquireSharedRedis(options: AcquireSharedRedisOptions = {}): Promise<SharedRedis> {
  return acquire({ install: installRedisServer, ...options });
}
