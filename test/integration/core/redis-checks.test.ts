/**
 * Redis checks at start-up, on a Redis of this file's own (its config is changed): the
 * maxmemory-policy warning, writes refused for a passing state, redisInfo with Redis down.
 * (Typed errors refused before touching Redis: errors.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { WorkQueue, WorkQueueError } from '../../../lib/index.js';
import { errorOf } from '../../support/core.js';
import { getFreePort, startRedis, type RedisHandle } from '../../support/redis-server.js';
import { codeOf } from './support.js';

describe('Redis checks at start-up', () => {
  let server: RedisHandle;
  const clients: Redis[] = [];
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await server.dispose();
  });
  const client = () => {
    const c = new Redis(server.url);
    clients.push(c);
    return c;
  };
  /** Queue `name` used (an add, counts) with `policy` set, and the warnings it logged. */
  const usedWith = async (policy: string, name: string) => {
    const admin = client();
    await admin.config('SET', 'maxmemory-policy', policy);
    const warnings: string[] = [];
    const logger = { warn: (m: string) => void warnings.push(m) };
    const q = new WorkQueue(client(), name, { logger });
    await q.add('x');
    await q.counts();
    return { warnings, q };
  };

  it("warns (once per queue) when maxmemory-policy is not 'noeviction'", async () => {
    const { warnings } = await usedWith('allkeys-lru', 'evictable');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/maxmemory-policy/);
    expect(warnings[0]).toMatch(/allkeys-lru/);
    expect(warnings[0]).toMatch(/noeviction/);
  });

  it("no warning with 'noeviction'", async () => {
    const { warnings, q } = await usedWith('noeviction', 'safe');
    expect(warnings).toEqual([]);
    expect((await q.redisInfo()).maxmemoryPolicy).toBe('noeviction');
  });

  it('a master refusing writes for a passing state (NOREPLICAS, READONLY): REDIS_UNAVAILABLE, not SCRIPT_ERROR', async () => {
    const admin = client();
    const q = new WorkQueue(client(), 'refusing', { logger: false });
    await q.add('x'); // (its start-up checks done)
    // No replica in sync under min-replicas-to-write: every write refused until one is.
    await admin.config('SET', 'min-replicas-to-write', '1');
    try {
      const e = (await errorOf(q.add('y'))) as WorkQueueError;
      expect(e.code).toBe('REDIS_UNAVAILABLE');
      expect(e.message).toMatch(/NOREPLICAS/);
    } finally {
      await admin.config('SET', 'min-replicas-to-write', '0');
    }
    expect((await q.add('z')).added).toBe(true); // call again: it goes through
  });

  it('redisInfo is bounded: with Redis down it rejects REDIS_UNAVAILABLE, never hangs', async () => {
    // A client as an app makes it: reconnecting forever, commands queued meanwhile.
    const down = new Redis({ host: '127.0.0.1', port: await getFreePort(), lazyConnect: true });
    down.on('error', () => undefined);
    clients.push(down);
    const q = new WorkQueue(down, 'info-down', { logger: false, commandTimeoutMs: 300 });
    expect(await codeOf(q.redisInfo())).toBe('REDIS_UNAVAILABLE');
  });
});
