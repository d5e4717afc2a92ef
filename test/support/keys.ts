import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/** A random, collision-free queue name, e.g. `q-1a2b3c4d`. */
export function uniqueName(prefix = 'q'): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** URL of the shared Redis started by Jest's globalSetup. */
export function testRedisUrl(): string {
  const url = process.env.WQ_TEST_REDIS_URL;
  if (!url) {
    throw new Error(
      'WQ_TEST_REDIS_URL is not set: run the tests through Jest (npm run test:jest), whose ' +
        'globalSetup (test/support/global-setup.ts) starts the shared Redis and sets it.',
    );
  }
  return url;
}

export type ScanClient = Pick<Redis, 'scan' | 'unlink'>;

/** All keys matching `pattern`, via SCAN (never KEYS). Sorted, without duplicates. */
export async function keysMatching(redis: ScanClient, pattern: string): Promise<string[]> {
  const found = new Set<string>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    for (const k of keys) found.add(k);
    cursor = next;
  } while (cursor !== '0');
  return [...found].sort();
}

/** UNLINK every key matching `pattern` (found via SCAN). Returns how many keys were removed. */
export async function deleteKeys(redis: ScanClient, pattern: string): Promise<number> {
  let removed = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    if (keys.length > 0) removed += await redis.unlink(...keys);
    cursor = next;
  } while (cursor !== '0');
  return removed;
}
