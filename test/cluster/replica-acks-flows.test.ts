/**
 * `replicaAcks` for flows and schedules on a real Redis Cluster (3 masters + 3 replicas): a flow
 * whose parent and children are on different masters is written with a WAIT on each master that
 * ran a part of it (no CROSSSLOT: each script and its WAIT go to their slot's node); with the
 * replica of one of them stalled the add rejects with NOT_REPLICATED though the whole flow was
 * written, and adding it again once the replica is back resolves without a duplicate. The same
 * for `upsertSchedule`.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { FlowProducer, WorkQueue, type FlowNode } from '../../lib/index.js';
import {
  CLUSTER_CLIENT_OPTIONS,
  clusterErrorStats,
  startRedisCluster,
  type RedisClusterHandle,
} from '../support/redis-cluster.js';
import { uniqueName } from '../support/keys.js';

let cluster: RedisClusterHandle;
let client: Cluster;

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = new Cluster(cluster.nodes, CLUSTER_CLIENT_OPTIONS);
  client.on('error', () => undefined);
}, 90_000);

afterAll(async () => {
  await client?.quit().catch(() => client.disconnect());
  await cluster?.dispose();
});

const PREFIX = 'rac';
const ACKS = { replicaAcks: 1, replicaAckTimeoutMs: 300 } as const;
const queue = (name: string) =>
  new WorkQueue(client, name, { prefix: PREFIX, logger: false, ...ACKS });

/** The master that serves queue `name`'s slot, and its replica. */
async function ownerOf(name: string) {
  const { master, replicas } = await cluster.ownerOf(await cluster.keySlot(queue(name).keys.base));
  return { master: master.port, replica: replicas[0]!.port };
}

/** WAIT calls one node has run so far. */
async function waits(port: number): Promise<number> {
  const info = String(await cluster.command(port, 'INFO', 'commandstats'));
  return Number(/cmdstat_wait:calls=(\d+)/.exec(info)?.[1] ?? 0);
}

/** A parent queue and a child queue on two different masters (asserted). */
async function apart(tag: string): Promise<[string, string]> {
  const parent = `${tag}-orders`;
  const home = (await ownerOf(parent)).master;
  for (let i = 0; ; i++) {
    const child = `${tag}-stock-${i}`;
    if ((await ownerOf(child)).master !== home) return [parent, child];
  }
}

const tree = (parent: string, child: string): FlowNode => ({
  queue: parent,
  id: 'order',
  data: 1,
  children: [
    { queue: child, id: 'pick-a', data: 'a' },
    { queue: child, id: 'pick-b', data: 'b' },
  ],
});

describe('replicaAcks on a Redis Cluster', () => {
  it('a flow across masters: WAIT on each; a stalled replica gives NOT_REPLICATED; again resolves', async () => {
    const [parent, child] = await apart(uniqueName('f'));
    const p = await ownerOf(parent);
    const c = await ownerOf(child);
    const fp = new FlowProducer(client, { prefix: PREFIX, logger: false, ...ACKS });
    const before = [await waits(p.master), await waits(c.master)];
    await fp.add({ queue: parent, data: 0, children: [{ queue: child, data: 0 }] });
    expect(await waits(p.master)).toBeGreaterThan(before[0]!);
    expect(await waits(c.master)).toBeGreaterThan(before[1]!);

    cluster.pause(c.replica);
    try {
      await expect(fp.add(tree(parent, child))).rejects.toMatchObject({ code: 'NOT_REPLICATED' });
    } finally {
      cluster.resume(c.replica);
    }
    // Written all the same, parent included (its master's replica confirmed it).
    expect((await queue(parent).getJob('order'))?.state).toBe('waiting-children');
    expect((await queue(child).getJob('pick-b'))?.state).toBe('pending');
    const again = await fp.add(tree(parent, child));
    expect(again.children!.map((n) => n.job.id)).toEqual(['pick-a', 'pick-b']);
    expect((await queue(child).counts()).pending).toBe(3);
    expect((await clusterErrorStats(cluster)).CROSSSLOT ?? 0).toBe(0);
  });

  it('upsertSchedule: WAIT on its master; NOT_REPLICATED while its replica is stalled', async () => {
    const name = uniqueName('s');
    const q = queue(name);
    const { master, replica } = await ownerOf(name);
    const before = await waits(master);
    expect(await q.upsertSchedule('a', { every: 60_000 }, { data: 1 })).toBe('created');
    expect(await waits(master)).toBe(before + 1);
    cluster.pause(replica);
    try {
      await expect(q.upsertSchedule('b', { every: 60_000 }, { data: 1 })).rejects.toMatchObject({
        code: 'NOT_REPLICATED',
      });
    } finally {
      cluster.resume(replica);
    }
    const ticks = (await q.counts()).delayed;
    expect(await q.upsertSchedule('b', { every: 60_000 }, { data: 1 })).toBe('unchanged');
    expect((await q.counts()).delayed).toBe(ticks);
  });
});
