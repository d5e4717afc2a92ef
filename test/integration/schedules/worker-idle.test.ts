/**
 * Idle cost of schedules: a queue with one idle Worker sends no more commands with 1,000
 * schedules (due at different times) than with none. On a private Redis, counting every command.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../../lib/index.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';

let server: RedisHandle;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  await redis.quit();
  await server.dispose();
});

const WINDOW_MS = 5_000;

async function redisNow(): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

async function commands(): Promise<number> {
  const info = await redis.info('stats');
  return Number(/total_commands_processed:(\d+)/.exec(info)![1]);
}

/** Commands Redis processed during WINDOW_MS with one idle worker on queue `name`. */
async function idleCommands(name: string, schedules: number): Promise<number> {
  const client = new Redis(server.url);
  const q = new WorkQueue<number>(client, name, { logger: false });
  const now = await redisNow();
  for (let i = 0; i < schedules; i++) {
    if (i % 2 === 0) {
      const startAt = now + 600_000 + i * 1_000;
      await q.upsertSchedule(`e${i}`, { every: 3_600_000, startAt }, { data: i });
    } else {
      await q.upsertSchedule(`c${i}`, { cron: `${i % 60} ${i % 24} * * *` }, { data: i });
    }
  }
  const w = new Worker(q, () => undefined);
  await w.start();
  const from = await redisNow();
  const before = await commands();
  await waitFor(async () => (await redisNow()) > from + WINDOW_MS, {
    timeoutMs: 20_000,
    intervalMs: 1_000,
  });
  const used = (await commands()) - before - 1;
  await w.close();
  await client.quit();
  return used;
}

describe('schedules: idle cost', () => {
  it('1,000 schedules add no polling to an idle queue', async () => {
    const none = await idleCommands('idle-none', 0);
    const many = await idleCommands('idle-many', 1_000);
    const perMinute = (n: number) => Math.round((n * 60_000) / WINDOW_MS);
    console.log(
      `idle worker, Redis commands per minute: ${perMinute(none)} without schedules, ` +
        `${perMinute(many)} with 1,000 schedules (TIME polls of this test included)`,
    );
    expect(many).toBeLessThanOrEqual(none * 1.2 + 10);
  }, 60_000);
});
