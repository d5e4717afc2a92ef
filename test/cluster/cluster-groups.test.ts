/**
 * Groups (issue 27) on an ioredis `Cluster` client against a real local Redis Cluster: every
 * group key (the per-group pending zsets and rate logs, named in Lua from a prefix passed in
 * KEYS) lives in the queue's slot, so every group script runs without CROSSSLOT: adds, round
 * robin leasing with per-group limits, Workers, admin, repair and obliterate. Group names that
 * look like hash tags (`{x}`) change nothing: the queue's tag comes first in every key.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { WorkQueue, Worker } from '../../lib/index.js';
import {
  CLUSTER_CLIENT_OPTIONS,
  clusterErrorStats,
  startRedisCluster,
  type RedisClusterHandle,
} from '../support/redis-cluster.js';
import { uniqueName } from '../support/keys.js';
import { waitFor } from '../support/wait.js';

let cluster: RedisClusterHandle;
let client: Cluster;

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = new Cluster(cluster.nodes, CLUSTER_CLIENT_OPTIONS);
}, 90_000);

afterAll(async () => {
  await client?.quit().catch(() => client.disconnect());
  await cluster?.dispose();
});

describe('groups on a Redis Cluster', () => {
  it('round robin, per-group limits, Workers, admin, repair and obliterate in the queue slot', async () => {
    const groups = ['{x}', 'tenant-1', 'tenant-2'];
    const q = new WorkQueue<{ g: string; i: number }>(client, uniqueName('grp'), {
      logger: false,
      groups: { concurrency: 2, limiter: { max: 1000, durationMs: 1000 } },
    });
    await q.addBulk(
      groups.flatMap((g) =>
        Array.from({ length: 20 }, (_, i) => ({ data: { g, i }, opts: { group: g } })),
      ),
    );
    // One job per group per turn; concurrency 2 per group.
    const first = await q.lease({ count: 10, leaseMs: 30_000 });
    expect(first.map((j) => `${j.group}${j.data.i}`)).toEqual([
      '{x}0',
      'tenant-10',
      'tenant-20',
      '{x}1',
      'tenant-11',
      'tenant-21',
    ]);
    await q.pauseGroup('tenant-1');
    await q.setGroupConcurrency('{x}', 5);
    expect((await q.getGroups()).map((g) => [g.group, g.running, g.paused])).toEqual([
      ['tenant-1', 2, true],
      ['tenant-2', 2, false],
      ['{x}', 2, false],
    ]);
    await q.release(first);
    await q.resumeGroup('tenant-1');
    expect(await q.drainGroup('tenant-2')).toBe(20);

    const seen = new Map<string, number[]>();
    const worker = new Worker(
      q,
      async (job) => {
        seen.set(job.group!, [...(seen.get(job.group!) ?? []), job.data.i]);
      },
      { concurrency: 5 },
    );
    await waitFor(async () => (await q.counts()).pending + (await q.counts()).leased === 0, {
      timeoutMs: 20_000,
      what: 'every job done',
    });
    await worker.close();
    expect([...seen.keys()].sort()).toEqual(['tenant-1', '{x}']);
    expect((await q.repair()).fixes).toEqual([]);
    // Group keys are named inside the scripts from a prefix: they share the queue's slot.
    const slot = await cluster.keySlot(q.keys.base);
    expect(await cluster.keySlot(q.keys.groupPending('{x}'))).toBe(slot);
    await q.obliterate({ force: true });
    const stats = await clusterErrorStats(cluster);
    expect(stats.CROSSSLOT ?? 0).toBe(0);
  });
});
