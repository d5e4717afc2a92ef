/**
 * Throughput history (issue 25, item 4): per-minute counts of completed jobs, failed attempts
 * that are retried and dead-lettered jobs for the last day — one ring per kind, written once per
 * script call — read with getMetrics(kind, { sinceMs, untilMs }).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { FlowProducer, NonRetryableError, WorkQueue } from '../../../lib/index.js';
import { redisNow } from '../../support/history.js';
import { QueueFixture } from '../../support/queue.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
// A Redis of its own: its command counts are this file's alone.
let server: RedisHandle;
let redis: Redis;
beforeAll(async () => {
  server = await startRedis();
  redis = new Redis(server.url);
});
afterAll(async () => {
  redis.disconnect();
  await server.dispose();
  await fx.cleanup();
});

const minute = (ms: number) => Math.floor(ms / 60_000) * 60_000;

describe('getMetrics', () => {
  it('counts completed, retried and dead-lettered jobs per minute, one write per call', async () => {
    const q = new WorkQueue<number>(redis, 'metrics', {
      logger: false,
      backoff: { type: 'fixed', delayMs: 0 },
      maxAttempts: 2,
    });
    const t0 = await redisNow(redis);
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ data: i })));
    const [a, b, c, ...rest] = await q.lease({ count: 30 });
    expect(await q.fail(a!, new Error('again'))).toBe('retried');
    expect(await q.fail(b!, new NonRetryableError('no'))).toBe('dead');
    expect(await q.fail(c!, new Error('again'))).toBe('retried');
    const before = await bitfieldCalls(redis);
    const r = await q.completeAndLease(rest.map((lease) => ({ lease })));
    // The 27 completions are counted by one write (not one per job).
    expect((await bitfieldCalls(redis)) - before).toBeLessThanOrEqual(3);
    expect(r.completed.filter(Boolean)).toHaveLength(27);
    const t1 = await redisNow(redis);
    const completed = await q.getMetrics('completed');
    expect(completed.total).toBe(27);
    for (const m of completed.perMinute) {
      expect(m.at).toBeGreaterThanOrEqual(minute(t0));
      expect(m.at).toBeLessThanOrEqual(t1);
    }
    expect((await q.getMetrics('failed')).total).toBe(2);
    expect((await q.getMetrics('dead')).total).toBe(1);
    // A window that ends before the work: nothing.
    expect(await q.getMetrics('completed', { untilMs: minute(t0) - 1 })).toEqual({
      perMinute: [],
      total: 0,
    });
    expect((await q.getMetrics('completed', { sinceMs: t0 })).total).toBe(27);
  });

  it('jobs dead-lettered by clean() (lease expiries) are counted too', async () => {
    const q = fx.queue<number>({ maxLeaseExpiries: 1 });
    await q.add(1);
    // A solo run: its expiry counts (maxLeaseExpiries 1: dead).
    const [l] = await q.lease({ leaseMs: 20 });
    expect(l).toBeDefined();
    await waitFor(async () => (await q.clean()).reclaimed === 1, { what: 'the first lapse' });
    await q.lease({ leaseMs: 20 });
    await waitFor(async () => (await q.clean()).deadLettered === 1, { what: 'the solo lapse' });
    expect((await q.getMetrics('dead')).total).toBe(1);
  });

  it('a flow parent a failed child dead-lettered counts in its queue', async () => {
    const parents = new WorkQueue<string>(redis, 'metrics-parents', { logger: false });
    const kids = new WorkQueue<string>(redis, 'metrics-kids', { logger: false, maxAttempts: 1 });
    const flows = new FlowProducer(redis, { logger: false });
    const tree = await flows.add({
      queue: 'metrics-parents',
      data: 'p',
      children: [{ queue: 'metrics-kids', data: 'c' }],
    });
    const [kid] = await kids.lease();
    expect(await kids.fail(kid!, new Error('broke'))).toBe('dead');
    await waitFor(async () => (await parents.getJob(tree.job.id))?.state === 'dead', {
      what: 'the parent dead-lettered',
    });
    expect((await parents.getMetrics('dead')).total).toBe(1);
    expect((await kids.getMetrics('dead')).total).toBe(1);
  });

  it('an empty queue has no counts', async () => {
    const q = fx.queue();
    expect(await q.getMetrics('completed')).toEqual({ perMinute: [], total: 0 });
  });
});

/** How many BITFIELD calls Redis ran so far (the metrics and times are BITFIELDs). */
async function bitfieldCalls(r: Redis): Promise<number> {
  const info = await r.info('commandstats');
  return Number(/cmdstat_bitfield:calls=(\d+)/.exec(info)?.[1] ?? 0);
}
