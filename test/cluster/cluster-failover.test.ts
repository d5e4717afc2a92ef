/**
 * Failover on a real local Redis Cluster: SIGKILL the master that serves a queue's slot while
 * producers and a worker run; its replica takes over and everybody carries on by themselves.
 * Then what asynchronous replication can lose, and what `replicaAcks` (WAIT) buys.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import type { Cluster } from 'ioredis';
import { WorkQueueError, Worker } from '../../lib/index.js';
import { privateCluster } from '../support/private-cluster.js';
import { clusterErrorStats } from '../support/redis-cluster.js';
import { uniqueName } from '../support/keys.js';
import { waitFor } from '../support/wait.js';

const cluster = privateCluster();

function newClient(): Cluster {
  return cluster.newClient(() => {}); // node errors during a failover are expected; commands retry
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether `needle` occurs in any AOF file of the node (its data dir survives a SIGKILL). */
function inAof(port: number, needles: string[]): Set<string> {
  const dir = path.join(cluster.dir, String(port), 'appendonlydir');
  const text = readdirSync(dir)
    .filter((f) => f.endsWith('.aof'))
    .map((f) => readFileSync(path.join(dir, f), 'latin1'))
    .join('');
  return new Set(needles.filter((n) => text.includes(n)));
}

async function waitOwnerChange(slot: number, oldPort: number): Promise<number> {
  const { master } = await waitFor(
    async () => {
      const o = await cluster.ownerOf(slot).catch(() => undefined);
      return o && o.master.port !== oldPort ? o : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: `a new master for slot ${slot}` },
  );
  return master.port;
}

interface Data {
  p: string;
  t: number;
}

describe('Redis Cluster failover', () => {
  it('SIGKILL of the queue slot master: the replica takes over, producers and a worker carry on, every acknowledged job is completed or provably lost by replication', async () => {
    const client = newClient();
    const name = uniqueName('fo');
    const q = cluster.queue<Data>(name, { leaseMs: 3_000 }, client);
    const slot = await cluster.keySlot(q.keys.base);
    const { master, replicas } = await cluster.ownerOf(slot);
    expect(replicas).toHaveLength(1);

    let tKill = Infinity;
    const acked = new Map<string, { id: string; sent: number; at: number }>();
    const addErrors: string[] = [];
    const handled = new Map<string, number>();
    let firstHandledAfterKill = 0;
    const workerErrors: unknown[] = [];

    const w = new Worker<Data, unknown>(
      q,
      async (job) => {
        handled.set(job.data.p, (handled.get(job.data.p) ?? 0) + 1);
        if (job.data.t > tKill && !firstHandledAfterKill) firstHandledAfterKill = Date.now();
        await sleep(1);
      },
      { concurrency: 10, idleTimeoutMs: 2_000 },
    );
    w.on('error', (e) => workerErrors.push(e));
    cluster.closeAfter(() => w.close({ timeoutMs: 2_000 }));
    await w.start();

    // What the Nest cleaner does: clean() on an interval, surviving its own failures.
    let cleaning = true;
    const cleaner = (async () => {
      while (cleaning) {
        await q.clean().catch(() => undefined);
        await sleep(500);
      }
    })();

    let producing = true;
    const producer = async (tag: string) => {
      for (let i = 0; producing; i++) {
        const p = `${tag}-${i}`;
        const sent = Date.now();
        try {
          const r = await q.add({ p, t: sent });
          acked.set(p, { id: r.id, sent, at: Date.now() });
        } catch (e) {
          addErrors.push(e instanceof Error ? e.message : String(e));
          await sleep(50);
        }
        await sleep(2);
      }
    };
    const producers = [producer('A'), producer('B')];

    await sleep(2_000);
    const before = acked.size;
    // (errorstats die with a killed node: check them first)
    expect((await clusterErrorStats(cluster)).CROSSSLOT ?? 0).toBe(0);
    tKill = Date.now();
    await cluster.kill(master.port);
    const newMaster = await waitOwnerChange(slot, master.port);
    const promotedMs = Date.now() - tKill;
    expect(newMaster).toBe(replicas[0]!.port);

    await waitFor(
      () => firstHandledAfterKill > 0 && [...acked.values()].some((a) => a.sent > tKill),
      { timeoutMs: 30_000, intervalMs: 50, what: 'producers and the worker to resume' },
    );
    const firstAckAfter = Math.min(
      ...[...acked.values()].filter((a) => a.sent > tKill).map((a) => a.at),
    );
    await sleep(2_000);
    producing = false;
    await Promise.all(producers);

    // Everything acknowledged is handled eventually (lost leases come back via clean()),
    // except jobs the replica never received.
    const notHandled = () => [...acked.keys()].filter((p) => !handled.has(p));
    await waitFor(() => notHandled().length === 0, { timeoutMs: 20_000 }).catch(() => undefined);
    const lost = notHandled();
    cleaning = false;
    await cleaner;

    // A lost job must be provably lost by asynchronous replication: acknowledged by the old
    // master before it died (so it is in the old master's AOF, fsync always), and absent from
    // the new master.
    const needles = lost.map((p) => `"p":"${p}"`);
    const inOldAof = inAof(master.port, needles);
    for (const p of lost) {
      expect(inOldAof.has(`"p":"${p}"`)).toBe(true);
      expect(acked.get(p)!.at).toBeLessThan(tKill + promotedMs);
      const now = await q.getJob(acked.get(p)!.id);
      expect(now?.data?.p).not.toBe(p);
    }
    const duplicates = [...handled.values()].filter((n) => n > 1).length;
    console.log(
      `failover: killed master ${master.port}; replica ${newMaster} promoted after ${promotedMs} ms; ` +
        `first add sent after the kill acknowledged ${firstAckAfter - tKill} ms after it, first such job handled ` +
        `${firstHandledAfterKill - tKill} ms after; acknowledged adds: ${before} before, ` +
        `${acked.size} in all; failed adds during the failover: ${addErrors.length}; ` +
        `jobs lost: ${lost.length}; handled more than once: ${duplicates}; worker errors reported: ${workerErrors.length}`,
    );
    if (addErrors.length)
      console.log('failover: add errors seen, e.g.', [...new Set(addErrors)].slice(0, 3));
    expect(firstAckAfter - tKill).toBeLessThan(20_000);

    await w.close({ timeoutMs: 5_000 });
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, workers: 0 });

    // The old master comes back as a replica of the new one.
    await cluster.restart(master.port);
    await cluster.waitHealthy(30_000);
    const after = await cluster.ownerOf(slot);
    expect(after.master.port).toBe(newMaster);
    expect(after.replicas.map((r) => r.port)).toEqual([master.port]);
  });

  it('replicaAcks: WAIT after add costs little when healthy; with the replica stalled plain adds are acknowledged and then lost on failover, while replicaAcks adds reject with NOT_REPLICATED', async () => {
    const plainClient = newClient();
    const ackClient = newClient();
    const name = uniqueName('wait');
    const plain = cluster.queue<{ p: string; pad?: string }>(name, {}, plainClient);
    const acked = cluster.queue<{ p: string; pad?: string }>(
      name,
      { replicaAcks: 1, replicaAckTimeoutMs: 300 },
      ackClient,
    );
    const slot = await cluster.keySlot(plain.keys.base);
    const { master, replicas } = await cluster.ownerOf(slot);
    const replica = replicas[0]!;

    // Cost while healthy: sequential adds, concurrent adds, bulk adds (medians of 3 runs).
    const ms = async (f: () => Promise<unknown>) => {
      const t = process.hrtime.bigint();
      await f();
      return Number(process.hrtime.bigint() - t) / 1e6;
    };
    const median = async (f: () => Promise<number>) => {
      const xs = [await f(), await f(), await f()].sort((a, b) => a - b);
      return xs[1]!;
    };
    const seq = (q: typeof plain) => async () =>
      (await ms(async () => {
        for (let i = 0; i < 200; i++) await q.add({ p: `seq-${i}` });
      })) / 200;
    const conc = (q: typeof plain) => async () =>
      2000 /
      (await ms(() => Promise.all(Array.from({ length: 2000 }, (_, i) => q.add({ p: `c-${i}` })))));
    const bulk = (q: typeof plain) => () =>
      ms(() => q.addBulk(Array.from({ length: 2000 }, (_, i) => ({ data: { p: `b-${i}` } }))));
    await seq(plain)();
    await seq(acked)(); // warm up (scripts loaded, connections open)
    const cost = {
      seq: [await median(seq(plain)), await median(seq(acked))],
      conc: [await median(conc(plain)), await median(conc(acked))],
      bulk: [await median(bulk(plain)), await median(bulk(acked))],
    };
    console.log(
      `replicaAcks: 1 cost (healthy, local): sequential add ${cost.seq[0]!.toFixed(2)} -> ${cost.seq[1]!.toFixed(2)} ms; ` +
        `2000 concurrent adds ${(cost.conc[0]! * 1000).toFixed(0)} -> ${(cost.conc[1]! * 1000).toFixed(0)} adds/s; ` +
        `addBulk(2000) ${cost.bulk[0]!.toFixed(1)} -> ${cost.bulk[1]!.toFixed(1)} ms`,
    );
    await plain.purgeDead();
    const ackedIds: string[] = [];
    for (let i = 0; i < 20; i++) ackedIds.push((await acked.add({ p: `ok-${i}` })).id);
    const baseline = (await plain.counts()).pending;

    // (errorstats die with a killed node: check them first)
    expect((await clusterErrorStats(cluster)).CROSSSLOT ?? 0).toBe(0);
    // Stall the replica: it stays connected but reads nothing.
    cluster.pause(replica.port);
    try {
      // replicaAcks: the add is stored on the master but not confirmed: it rejects.
      const t = Date.now();
      const err = await acked.add({ p: 'stalled' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkQueueError);
      expect((err as WorkQueueError).code).toBe('NOT_REPLICATED');
      expect(Date.now() - t).toBeGreaterThanOrEqual(250);

      // Plain adds are acknowledged at once; write until the master holds unsent replication
      // data in its own memory (the replica client's output buffer, `omem`): that part dies with
      // the master. (What is already in kernel socket buffers still reaches the replica.)
      const pad = 'x'.repeat(64 * 1024);
      let plainAcked = 0;
      for (;;) {
        await plain.addBulk(
          Array.from({ length: 16 }, (_, i) => ({ data: { p: `stall-${plainAcked + i}`, pad } })),
        );
        plainAcked += 16;
        const list = String(
          await cluster.command(master.port, 'CLIENT', 'LIST', 'TYPE', 'replica'),
        );
        const omem = Number(/omem=(\d+)/.exec(list)?.[1] ?? 0);
        if (omem > 2 * 1024 * 1024 || plainAcked >= 1000) break;
      }
      const tKill = Date.now();
      await cluster.kill(master.port);
      cluster.resume(replica.port);
      const newMaster = await waitOwnerChange(slot, master.port);
      expect(newMaster).toBe(replica.port);
      const promotedMs = Date.now() - tKill;

      // Once the cluster answers again: count what survived.
      const counts = await waitFor(() => plain.counts().catch(() => undefined), {
        timeoutMs: 20_000,
        what: 'the queue to answer after failover',
      });
      const survived = counts.pending - baseline;
      const lost = plainAcked - survived;
      console.log(
        `replication loss: ${plainAcked} adds acknowledged by the master while its replica was stalled, ` +
          `${survived} reached the replica, ${lost} LOST on failover (promoted after ${promotedMs} ms); ` +
          `replicaAcks adds in the same window: rejected with NOT_REPLICATED`,
      );
      expect(lost).toBeGreaterThan(0);
      // Everything replicaAcks acknowledged survived.
      for (const id of ackedIds) expect(await plain.getJob(id)).toMatchObject({ state: 'pending' });

      // The new master has no replica until the old one comes back: replicaAcks adds reject.
      const noReplica = await acked.add({ p: 'no replica' }).catch((e: unknown) => e);
      expect((noReplica as WorkQueueError).code).toBe('NOT_REPLICATED');
      await cluster.restart(master.port);
      await cluster.waitHealthy(30_000);
      expect(await acked.add({ p: 'back' })).toMatchObject({ added: true });
    } finally {
      cluster.resume(replica.port);
    }
  });

  it('no node ever answered CROSSSLOT', async () => {
    const stats = await clusterErrorStats(cluster);
    console.log('failover file: error stats of the nodes alive now', stats);
    expect(stats.CROSSSLOT ?? 0).toBe(0);
  });
});
