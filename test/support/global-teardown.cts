// Jest globalTeardown: release the Redis acquired by global-setup.cts (same process).
import type { SharedRedis } from '../../tools/redis-server';

const SHARED_REDIS_KEY = '__WQ_SHARED_REDIS__';

export default async function globalTeardown(): Promise<void> {
  const g = globalThis as Record<string, unknown>;
  const shared = g[SHARED_REDIS_KEY] as SharedRedis | undefined;
  delete g[SHARED_REDIS_KEY];
  await shared?.dispose();
}
