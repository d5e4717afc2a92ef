/**
 * Start-up on a real local Redis Cluster: the testing kit's `removeKeys` on a Cluster client
 * that has not connected yet, and the first call of a new `WorkQueue` (its INFO check of every
 * master) and a `Worker.start()` while another master fails over.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster, type ClusterOptions } from 'ioredis';
import { WorkQueue, WorkQueueError, Worker } from '../../lib/index.js';
import { removeKeys, uniquePrefix } from '../../src/testing/index.js';
import { getFreePort } from '../../tools/redis-server.js';
import { uniqueName } from '../support/keys.js';
import {
  CLUSTER_CLIENT_OPTIONS,
  startRedisCluster,
  type RedisClusterHandle,
} from '../support/redis-cluster.js';
import { waitFor } from '../support/wait.js';

let cluster: RedisClusterHandle;
const clients: Cluster[] = [];
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
}, 90_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  for (const c of clients) c.disconnect();
  await cluster?.dispose();
});

function newClient(options: ClusterOptions = {}, nodes = cluster.nodes): Cluster {
  const c = new Cluster(nodes, { ...CLUSTER_CLIENT_OPTIONS, ...options });
  c.on('error', () => {}); // node errors during a failover are expected
  clients.push(c);
  return c;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const codeOf = (e: unknown) => (e instanceof WorkQueueError ? e.code : String(e));

/** Keys of the prefix on every master, counted on the nodes themselves. */
async function keysOf(prefix: string): Promise<number[]> {
  const counts: number[] = [];
  for (const { port } of await cluster.masters()) {
    let n = 0;
    let cursor = '0';
    do {
      const [next, keys] = (await cluster.command(
        port,
        'SCAN',
        cursor,
        'MATCH',
        `${prefix}:{*`,
        'COUNT',
        1000,
      )) as [string, string[]];
      n += keys.length;
      cursor = next;
    } while (cursor !== '0');
    counts.push(n);
  }
  return counts;
}
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('removeKeys on a Cluster client', () => {
  it('a lazy client, and one still connecting: connects first, then empties every master', async () => {
    const ready = newClient();
    // (With its offline queue off, a lazy one refused the PING: "Cluster isn't ready".)
    for (const [lazyConnect, enableOfflineQueue] of [
      [true, true],
      [false, true],
      [true, false],
    ]) {
      const prefix = uniquePrefix('rm');
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          new WorkQueue(ready, `q${i}`, { prefix, logger: false }).add({ i }),
        ),
      );
      const before = await keysOf(prefix);
      expect(before.filter((n) => n > 0).length).toBeGreaterThan(1); // on several masters
      const client = newClient({ lazyConnect, enableOfflineQueue });
      expect(client.status).toBe(lazyConnect ? 'wait' : 'connecting');
      expect(await removeKeys(client, prefix)).toBe(sum(before));
      expect(sum(await keysOf(prefix))).toBe(0);
    }
  });

  it('a cluster that cannot be reached: REDIS_UNAVAILABLE within timeoutMs', async () => {
    const nowhere = newClient({ lazyConnect: true }, [
      { host: '127.0.0.1', port: await getFreePort() },
    ]);
    const t0 = Date.now();
    const e = await removeKeys(nowhere, uniquePrefix('rm'), { timeoutMs: 500 }).catch(
      (x: unknown) => x,
    );
    expect(codeOf(e)).toBe('REDIS_UNAVAILABLE');
    expect((e as Error).message).toMatch(/^removeKeys: no reply from Redis to PING within 500 ms/);
    expect(Date.now() - t0).toBeLessThan(3_000);
  });
});

describe('a new WorkQueue while a master fails over', () => {
  it('its first call and a Worker start ride out the failover of another master; a master that stays down fails them after commandTimeoutMs', async () => {
    const client = newClient();
    await client.ping();
    const victimQueue = new WorkQueue(client, uniqueName('victim'), { logger: false });
    const slot = await cluster.keySlot(victimQueue.keys.base);
    const { master: victim, replicas } = await cluster.ownerOf(slot);
    // Queues on the other (healthy) masters: a queue of the failed master waits by design.
    const topo = await cluster.topology();
    const names: string[] = [];
    while (names.length < 41) {
      const name = uniqueName('fresh');
      const s = await cluster.keySlot(new WorkQueue(client, name, { logger: false }).keys.base);
      const owner = topo.find((n) => n.slots.some(([a, b]) => s >= a && s <= b));
      if (owner && owner.port !== victim.port) names.push(name);
    }
    const fresh = (name: string, commandTimeoutMs = 10_000) =>
      new WorkQueue(client, name, { logger: false, commandTimeoutMs });

    await cluster.kill(victim.port);
    // ioredis reloads the slot map now and then (slotsRefreshInterval, a command that failed):
    // until the replica is promoted, the map it reads still names the dead master.
    await new Promise((resolve) => client.refreshSlotsCache(resolve));
    expect(client.nodes('master').map((n) => n.options.port)).toContain(victim.port);

    const t0 = Date.now();
    let promotedAt = 0;
    const promoted = waitFor(
      async () => {
        const o = await cluster.ownerOf(slot).catch(() => undefined);
        return o && o.master.port !== victim.port ? o.master.port : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: `a new master for slot ${slot}` },
    ).then((port) => ((promotedAt = Date.now()), port));
    const outcome = (p: Promise<unknown>, at: number) =>
      p.then(
        () => 'ok',
        (e: unknown) => `+${at} ms: ${(e as Error).message}`,
      );

    const w = new Worker(fresh(names[0]!), async () => undefined, { concurrency: 1 });
    closers.push(() => w.close({ timeoutMs: 2_000 }));
    const results = [outcome(w.start(), 0)];
    // A fresh queue every 200 ms from the kill until 0.5 s after the promotion.
    for (let i = 1; i < names.length - 1 && (!promotedAt || Date.now() < promotedAt + 500); i++) {
      results.push(outcome(fresh(names[i]!).add({ i }), Date.now() - t0));
      await sleep(200);
    }
    expect(await promoted).toBe(replicas[0]!.port);
    const failed = (await Promise.all(results)).filter((r) => r !== 'ok');
    expect(failed).toEqual([]);
    expect(results.length).toBeGreaterThan(5);

    // Now the new master goes too, with no replica left: its slots stay served by nobody.
    const second = replicas[0]!.port;
    await cluster.kill(second);
    await new Promise((resolve) => client.refreshSlotsCache(resolve));
    const t1 = Date.now();
    const e = await fresh(names.at(-1)!, 1_500)
      .ready()
      .catch((x: unknown) => x);
    const ms = Date.now() - t1;
    expect(codeOf(e)).toBe('REDIS_UNAVAILABLE');
    expect(ms).toBeGreaterThanOrEqual(1_000); // tried again until commandTimeoutMs...
    expect(ms).toBeLessThan(4_000); // ...and no longer
  });
});
