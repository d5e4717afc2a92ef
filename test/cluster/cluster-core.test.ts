/**
 * The core on an ioredis `Cluster` client against a real local Redis Cluster (3 masters + 3
 * replicas): the same behaviour as on one Redis, every key of a queue in one slot, queues spread
 * over every master, no CROSSSLOT anywhere. The Worker and the events on a Cluster:
 * cluster-worker.test.ts.
 */
import { describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { WorkQueue, type LeasedJob } from '../../lib/index.js';
import { privateCluster } from '../support/private-cluster.js';
import { CLUSTER_CLIENT_OPTIONS, clusterErrorStats } from '../support/redis-cluster.js';
import { uniqueName } from '../support/keys.js';
import { waitFor } from '../support/wait.js';

const cluster = privateCluster();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('core on a Redis Cluster', () => {
  it('every operation of the lifecycle behaves as on one Redis', async () => {
    const q = cluster.queue<{ n: number }>(uniqueName('life'), {
      maxAttempts: 2,
      backoff: { type: 'fixed', delayMs: 0 },
      storeResults: { ttlMs: 60_000 },
      heartbeatTimeoutMs: 500,
    });
    // add / addBulk (1 000 in one call), dedupe by caller id
    const bulk = await q.addBulk(Array.from({ length: 1000 }, (_, n) => ({ data: { n } })));
    expect(bulk).toHaveLength(1000);
    expect(bulk.every((r, i) => r.added && r.id === String(i + 1))).toBe(true);
    expect(await q.add({ n: -1 }, { id: 'caller-1', priority: 0 })).toEqual({
      id: 'caller-1',
      added: true,
    });
    expect(await q.add({ n: -2 }, { id: 'caller-1' })).toEqual({ id: 'caller-1', added: false });
    const delayed = await q.add({ n: -3 }, { delayMs: 60_000 });
    expect(delayed.added).toBe(true);
    expect(await q.counts()).toMatchObject({ pending: 1001, delayed: 1, leased: 0, dead: 0 });

    // lease: priority first, then FIFO
    const jobs = await q.lease({ count: 6, leaseMs: 30_000 });
    expect(jobs.map((j) => j.id)).toEqual(['caller-1', '1', '2', '3', '4', '5']);
    const [c1, j1, j2, j3, j4, j5] = jobs as [
      LeasedJob<{ n: number }>,
      ...LeasedJob<{ n: number }>[],
    ];

    // complete: true exactly once, result stored
    expect(await q.complete(c1!, { ok: 'yes' } as never)).toBe(true);
    expect(await q.complete(c1!)).toBe(false);
    expect(await q.getJob('caller-1')).toMatchObject({ state: 'completed', result: { ok: 'yes' } });
    expect(await q.getResult('caller-1')).toEqual({ ok: 'yes' });

    // fail: retry, then dead-letter after maxAttempts
    expect(await q.fail(j1!, new Error('boom 1'))).toBe('retried');
    const again = await q.lease({ count: 1000, leaseMs: 30_000 });
    const j1b = again.find((j) => j.id === '1')!;
    expect(j1b.attempt).toBe(2);
    expect(await q.fail(j1b, new Error('boom 2'))).toBe('dead');
    expect(await q.getJob('1')).toMatchObject({ state: 'dead', lastError: 'boom 2' });

    // release to the front, extend, progress, stale lease
    const [ok] = await q.release(j2!);
    expect(ok).toBe(true);
    expect(await q.extend(j3!, 60_000)).toEqual([true]);
    expect(await q.progress(j3!, 0.5)).toBe(true);
    expect(await q.getJob('3')).toMatchObject({ state: 'leased', progress: 0.5 });
    expect(await q.extend(j2!, 1000)).toEqual([false]);

    // cancel a leased job: its holder's complete is false
    expect(await q.cancel('4')).toBe(true);
    expect(await q.complete(j4!)).toBe(false);
    expect(await q.getJob('4')).toBeNull();

    // the released job comes back first
    const [front] = await q.lease({ count: 1 });
    expect(front!.id).toBe('2');

    // counts
    const counts = await q.counts();
    expect(counts).toMatchObject({ delayed: 1, dead: 1 });
    expect(counts.leased).toBe(again.length - 1 + 3); // `again` minus j1b, plus j3, j5, j2
    // repair on a healthy queue finds nothing to fix
    expect((await q.repair()).fixes).toEqual([]);

    // clean: expired leases go back; a dead worker's leases are reclaimed
    const short = await q.lease({ count: 1, leaseMs: 50 });
    expect(short).toHaveLength(0); // everything pending is leased already
    await q.release(again.filter((j) => j.id !== '1').slice(0, 20));
    const expiring = await q.lease({ count: 5, leaseMs: 50 });
    expect(expiring).toHaveLength(5);
    const wid = await q.registerWorker();
    const orphaned = await q.lease({ count: 5, leaseMs: 600_000, workerId: wid });
    expect(orphaned).toHaveLength(5);
    await sleep(700); // > leaseMs 50 and > heartbeatTimeoutMs 500
    // (The queue's only worker: the first clean to find every beat silent judges nobody, a clean
    // half a timeout later does.)
    const report = { reclaimed: 0, deadWorkers: 0, reclaimedFromWorkers: 0 };
    await waitFor(
      async () => {
        const r = await q.clean();
        report.reclaimed += r.reclaimed;
        report.deadWorkers += r.deadWorkers;
        report.reclaimedFromWorkers += r.reclaimedFromWorkers;
        return report.deadWorkers > 0;
      },
      { what: 'the silent worker judged', timeoutMs: 5_000, intervalMs: 50 },
    );
    expect(report).toEqual({ reclaimed: 5, deadWorkers: 1, reclaimedFromWorkers: 5 });

    // dead letters: list, retry, purge
    const dead = await q.listDead();
    expect(dead.map((d) => d.id)).toEqual(['1']);
    expect(await q.retryDead('1')).toBe(true);
    expect(await q.getJob('1')).toMatchObject({ state: 'pending', attemptsMade: 0 });
    // (job 1 went to the back of its priority; lease everything to find it)
    // (the reclaimed jobs are suspects now: each is leased alone, so lease until none is left)
    const rest: Array<(typeof again)[number]> = [];
    for (let batch = await q.lease({ count: 2000 }); batch.length > 0;) {
      rest.push(...batch);
      batch = await q.lease({ count: 2000 });
    }
    const j1c = rest.find((j) => j.id === '1')!;
    expect(await q.fail(j1c, new Error('x'), { retryable: false })).toBe('dead');
    expect(await q.purgeDead()).toBe(1);
    expect(await q.listDead()).toEqual([]);

    // finish everything leased so far
    const all = [...again, ...rest, j3!, j5!, front!].filter((j) => j.id !== '1' && j.id !== '4');
    await q.release(all); // back to pending, whoever holds them
    for (;;) {
      const batch = await q.lease({ count: 500 });
      if (batch.length === 0) break;
      const { completed } = await q.completeAndLease(batch.map((lease) => ({ lease })));
      expect(completed.every(Boolean)).toBe(true);
    }
    expect(await q.cancel(delayed.id)).toBe(true);
    expect(await q.counts()).toMatchObject({ pending: 0, delayed: 0, leased: 0, dead: 0 });
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('20 queues spread over every master; each queue lives on one node only', async () => {
    const prefix = uniqueName('spread');
    const names = Array.from({ length: 20 }, (_, i) => `q${i}`);
    const queues = names.map((n) => cluster.queue<{ n: number }>(n, { prefix }));
    await Promise.all(
      queues.map(async (q) => {
        await q.addBulk(Array.from({ length: 10 }, (_, n) => ({ data: { n } })));
        const jobs = await q.lease({ count: 5 });
        await q.completeAndLease(jobs.map((lease) => ({ lease })));
        await q.fail((await q.lease({ count: 1 }))[0]!, new Error('x'), { retryable: false });
      }),
    );
    const masters = await cluster.masters();
    expect(masters).toHaveLength(3);
    const byMaster = new Map<number, string[]>();
    for (const q of queues) {
      const slot = await cluster.keySlot(q.keys.base);
      const { master } = await cluster.ownerOf(slot);
      byMaster.set(master.port, [...(byMaster.get(master.port) ?? []), q.name]);
    }
    // Every master got some queues.
    expect([...byMaster.keys()].sort()).toEqual(masters.map((m) => m.port).sort());
    // And each master holds exactly the keys of its queues (SCAN on the node itself).
    for (const m of masters) {
      const found = new Set<string>();
      let cursor = '0';
      do {
        const [next, keys] = (await cluster.command(
          m.port,
          'SCAN',
          cursor,
          'MATCH',
          `${prefix}:*`,
          'COUNT',
          1000,
        )) as [string, string[]];
        for (const k of keys) found.add(/\{(.*)\}/.exec(k)![1]!);
        cursor = next;
      } while (cursor !== '0');
      expect([...found].sort()).toEqual([...byMaster.get(m.port)!].sort());
    }
    for (const q of queues) {
      expect(await q.counts()).toMatchObject({ pending: 4, leased: 0, dead: 1 });
      expect((await q.repair()).fixes).toEqual([]);
    }
    console.log(
      'cluster: queues per master',
      Object.fromEntries([...byMaster].map(([p, qs]) => [p, qs.length])),
    );
  });

  it('start-up checks read INFO of every master (a keyless INFO would reach one random node); a lazy Cluster client works', async () => {
    const masters = await cluster.masters();
    const odd = masters[masters.length - 1]!;
    await cluster.command(odd.port, 'CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const lazy = new Cluster(cluster.nodes, { ...CLUSTER_CLIENT_OPTIONS, lazyConnect: true });
      cluster.closeAfter(() => lazy.quit());
      const warnings: string[] = [];
      const q = new WorkQueue(lazy, uniqueName('info'), {
        logger: { warn: (m: string) => warnings.push(m) },
      });
      expect(await q.add('x')).toMatchObject({ added: true });
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(/maxmemory-policy is 'allkeys-lru'/);
      expect(await q.redisInfo()).toMatchObject({
        version: expect.stringMatching(/^\d+\.\d+/),
        maxmemoryPolicy: 'allkeys-lru',
      });
    } finally {
      await cluster.command(odd.port, 'CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
    }
  });

  it('no node ever answered CROSSSLOT', async () => {
    const stats = await clusterErrorStats(cluster);
    console.log('cluster: error stats over the whole file', stats);
    expect(stats.CROSSSLOT ?? 0).toBe(0);
  });
});
