import { afterAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { NonRetryableError, type WorkQueue } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { allPayloads, putPayload } from '../../support/payloads.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/** Every structure of a queue, read straight from Redis. */
async function snapshot(c: Redis, q: WorkQueue<unknown>) {
  const k = q.keys;
  const lists: string[][] = [];
  for (let p = 0; p <= 9; p++) lists.push(await c.lrange(k.pending(p), 0, -1));
  return {
    lists,
    delayed: await c.zrange(k.delayed, '0', '-1', 'WITHSCORES'),
    leased: await c.zrange(k.leased, '0', '-1', 'WITHSCORES'),
    dead: await c.zrange(k.dead, '0', '-1', 'WITHSCORES'),
    data: await allPayloads(c, k),
    meta: await c.hgetall(k.key('meta')),
    tokens: await c.hgetall(k.leaseHolders),
    ids: await c.hgetall(k.key('callerIds')),
    progress: await c.hgetall(k.key('progress')),
  };
}

/** Every place a job id appears. */
async function placesOf(c: Redis, q: WorkQueue<unknown>, id: string): Promise<string[]> {
  const k = q.keys;
  const out: string[] = [];
  for (let p = 0; p <= 9; p++) {
    const n = (await c.lrange(k.pending(p), 0, -1)).filter((x) => x === id).length;
    for (let i = 0; i < n; i++) out.push(`p${p}`);
  }
  for (const [name, key] of [
    ['delayed', k.delayed],
    ['leased', k.leased],
    ['dead', k.dead],
  ] as const) {
    if ((await c.zscore(key, id)) !== null) out.push(name);
  }
  if ((await c.hexists(k.leaseHolders, id)) === 1) out.push('token');
  return out;
}

describe('repair fixes tampered state', () => {
  it('an orphan payload (data, no queue entry) is requeued and leasable', async () => {
    const q = fx.queue<unknown>();
    const c = fx.client();
    await q.add({ normal: true });
    await putPayload(c, q.keys, '500', JSON.stringify({ orphan: true }));
    const report = await q.repair();
    expect(report.fixes).toHaveLength(1);
    expect(report.fixes[0]).toMatch(/^500: .*requeued/);
    expect(await placesOf(c, q, '500')).toEqual(['p5']);
    const jobs = await q.lease({ count: 10, leaseMs: 10_000 });
    expect(jobs.map((j) => [j.id, j.data])).toEqual([
      ['1', { normal: true }],
      ['500', { orphan: true }],
    ]);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('an id in two places is fixed to one place (leased, dead, delayed and pending twice)', async () => {
    const q = fx.queue<unknown>({ maxAttempts: 1 });
    const c = fx.client();
    await q.addBulk([
      { data: 'leased' },
      { data: 'dead' },
      { data: 'twice', opts: { priority: 6 } },
      { data: 'other', opts: { priority: 6 } },
      { data: 'delayed', opts: { delayMs: 60_000 } },
    ]);
    const [leased, dead] = await q.lease({ count: 2, leaseMs: 60_000 });
    expect(await q.fail(dead!, new NonRetryableError('x'))).toBe('dead');
    // Tamper: put the leased and the dead job in a pending list too, the delayed one in two
    // lists, and the pending job a second time into its own list.
    await c.lpush(q.keys.pending(5), leased!.seq);
    await c.rpush(q.keys.pending(0), dead!.seq);
    await c.rpush(q.keys.pending(5), '5');
    await c.rpush(q.keys.pending(9), '5');
    await c.rpush(q.keys.pending(6), '3');
    expect(await placesOf(c, q, leased!.seq)).toEqual(['p5', 'leased', 'token']);
    expect(await placesOf(c, q, dead!.seq)).toEqual(['p0', 'dead']);
    expect(await placesOf(c, q, '3')).toEqual(['p6', 'p6']);

    const report = await q.repair();
    expect([...report.fixes].sort()).toEqual([
      expect.stringMatching(/^1: leased job also queued elsewhere/),
      expect.stringMatching(/^2: dead job also queued elsewhere/),
      expect.stringMatching(/^3: job pending 2 times/),
      expect.stringMatching(/^5: delayed job also pending/),
    ]);
    expect(await placesOf(c, q, leased!.seq)).toEqual(['leased', 'token']);
    expect(await placesOf(c, q, dead!.seq)).toEqual(['dead']);
    expect(await placesOf(c, q, '3')).toEqual(['p6']);
    expect(await placesOf(c, q, '5')).toEqual(['delayed']);
    // The pending job kept its place in line (ahead of 'other').
    expect(await c.lrange(q.keys.pending(6), 0, -1)).toEqual(['3', '4']);
    // The leased job is still held by its holder.
    expect(await q.extend(leased!, 60_000)).toEqual([true]);
    const jobs = await q.lease({ count: 10, leaseMs: 10_000 });
    expect(jobs.map((j) => j.data)).toEqual(['twice', 'other']);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('a lease without payload is removed', async () => {
    const q = fx.queue<unknown>();
    const c = fx.client();
    await q.add('fine');
    await c.zadd(q.keys.leased, Date.now() + 60_000, '600');
    await c.hset(q.keys.leaseHolders, '600', '99:0');
    expect((await q.counts()).leased).toBe(1);
    const report = await q.repair();
    expect(report.fixes).toEqual([expect.stringMatching(/^600: lease without payload/)]);
    expect(await placesOf(c, q, '600')).toEqual([]);
    expect(await q.counts()).toMatchObject({ leased: 0, pending: 1 });
  });

  it('a caller-id index entry pointing to nothing is removed', async () => {
    const q = fx.queue<unknown>();
    const c = fx.client();
    await q.add('real', { id: 'real-id' });
    await c.hset(q.keys.key('callerIds'), 'ghost', '700');
    // The dangling entry would make the id look taken.
    expect(await q.add('x', { id: 'ghost' })).toEqual({ id: 'ghost', added: false });
    const report = await q.repair();
    expect(report.fixes).toEqual([expect.stringMatching(/^ghost: caller id of a missing job/)]);
    expect(await c.hgetall(q.keys.key('callerIds'))).toEqual({ 'real-id': '1' });
    expect(await q.add('x', { id: 'ghost' })).toEqual({ id: 'ghost', added: true });
  });

  it('jobs whose metadata was lost (the meta hash deleted) get their caller ids back', async () => {
    const q = fx.queue<unknown>();
    const c = fx.client();
    await q.addBulk([0, 1, 2].map((i) => ({ data: i, opts: { id: `c${i}`, name: 'n' } })));
    await q.add('plain');
    await c.del(q.keys.key('meta'));
    // (Found nothing: the jobs then ran, and completed, under their numbers.)
    expect((await q.repair()).fixes).toEqual(
      ['c0', 'c1', 'c2'].map(
        (id, i) => `${id}: caller id restored to its job ${i + 1}, whose metadata had none`,
      ),
    );
    const leased = await q.lease({ count: 10, leaseMs: 60_000 });
    expect(leased.map((j) => j.id)).toEqual(['c0', 'c1', 'c2', '4']);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('a healthy busy queue: no fixes, no change, order kept', async () => {
    const q = fx.queue<unknown>({ maxAttempts: 1 });
    const c = fx.client();
    const jobs = Array.from({ length: 2_500 }, (_, i) => ({
      data: { i },
      opts: {
        priority: i % 10,
        ...(i % 7 === 0 ? { id: `cid-${i}` } : {}),
        ...(i % 11 === 0 ? { delayMs: 60_000 + i } : {}),
        ...(i % 13 === 0 ? { name: 'named' } : {}),
      },
    }));
    await q.addBulk(jobs);
    const worker = await q.registerWorker();
    const leased = await q.lease({ count: 300, leaseMs: 60_000, workerId: worker });
    const plain = await q.lease({ count: 300, leaseMs: 60_000 });
    for (const j of leased.slice(0, 50)) await q.progress(j, 0.25);
    for (const j of plain.slice(0, 40)) {
      await q.fail(j, new Error('dead on purpose'));
    }
    const counts = await q.counts();
    expect(counts.pending).toBeGreaterThan(1_000);
    expect(counts).toMatchObject({ leased: 560, dead: 40 });
    expect(counts.delayed).toBeGreaterThan(100);

    const before = await snapshot(c, q);
    const report = await q.repair();
    expect(report.fixes).toEqual([]);
    expect(await snapshot(c, q)).toEqual(before);
  });

  it('a cancelled pending job is not a fix: its list entry is dropped as a tombstone', async () => {
    const q = fx.queue<number>();
    await q.addBulk([1, 2, 3].map((data) => ({ data })));
    expect(await q.cancel('2')).toBe(true);
    const report = await q.repair();
    expect(report).toMatchObject({ fixes: [], tombstones: 1 });
    expect((await q.counts()).pending).toBe(2);
    expect((await q.lease({ count: 3 })).map((j) => j.data)).toEqual([1, 3]);
  });
});
