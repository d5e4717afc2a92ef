/**
 * The Worker and the events on an ioredis `Cluster` client against a real local Redis Cluster
 * (3 masters + 3 replicas): blocking waits, events and wake-ups routed to the queue's slot. The
 * core's operations on a Cluster: cluster-core.test.ts.
 */
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { QueueEvents, WorkQueue, Worker } from '../../lib/index.js';
import { delay as sleep } from '../../tools/redis-server.js';
import { privateCluster } from '../support/private-cluster.js';
import { clusterErrorStats } from '../support/redis-cluster.js';
import { uniqueName } from '../support/keys.js';
import { waitFor } from '../support/wait.js';

const cluster = privateCluster();

describe('the Worker and events on a Redis Cluster', () => {
  it('a Worker processes 2 000 jobs at concurrency 10, wakes up at once when idle, aborts a cancelled job, closes gracefully', async () => {
    const q = cluster.queue<{ n: number; hold?: boolean }>(uniqueName('work'));
    const done = new Set<number>();
    let aborted: unknown;
    let holding: (() => void) | undefined;
    const w = new Worker(
      q,
      async (job) => {
        if (job.data.hold) {
          holding?.();
          await new Promise<void>((resolve) => {
            job.signal.addEventListener('abort', () => {
              aborted = job.signal.reason;
              resolve();
            });
          });
          return;
        }
        done.add(job.data.n);
      },
      { concurrency: 10, idleTimeoutMs: 5_000 },
    );
    const errors: unknown[] = [];
    w.on('error', (e) => errors.push(e));
    cluster.closeAfter(() => w.close({ timeoutMs: 1000 }));
    await w.start();

    const t0 = Date.now();
    await q.addBulk(Array.from({ length: 2000 }, (_, n) => ({ data: { n } })));
    await waitFor(() => done.size === 2000, { timeoutMs: 60_000, what: '2 000 jobs' });
    console.log(`cluster worker: 2 000 jobs in ${Date.now() - t0} ms at concurrency 10`);

    // Idle: the worker now blocks on the wake list (BLPOP on the slot's master).
    await sleep(1_500);
    const t1 = Date.now();
    await q.add({ n: 5000 });
    await waitFor(() => done.has(5000), { timeoutMs: 4_000, what: 'idle wake-up' });
    const wake = Date.now() - t1;
    console.log(`cluster worker: idle add -> handler ${wake} ms`);
    expect(wake).toBeLessThan(2_000);

    // Cancel: the event is published by the script on the slot's master; the worker's
    // subscriber sits on whichever node ioredis picked, and a plain subscriber on a node that
    // does NOT serve the slot hears it too (PUBLISH goes over the cluster bus).
    const slot = await cluster.keySlot(q.keys.base);
    const { master } = await cluster.ownerOf(slot);
    const other = cluster.nodes.find((n) => n.port !== master.port)!;
    const sub = new Redis({ host: other.host, port: other.port });
    cluster.closeAfter(() => sub.quit());
    const heard: string[] = [];
    sub.on('message', (_ch: string, m: string) => heard.push(m));
    await sub.subscribe(q.keys.noticeChannel);
    const started = new Promise<void>((r) => (holding = r));
    const held = await q.add({ n: -1, hold: true });
    await started;
    const lost = new Promise<string>((r) => w.once('leaseLost', (_job, reason) => r(reason)));
    const t2 = Date.now();
    expect(await q.cancel(held.id)).toBe(true);
    // Learnt from the event, or (when the cancel beat the worker's adoption of the hand-off
    // that brought the job) from the refused adoption.
    expect(await lost).toMatch(/^job cancelled$|^hand-off lost before adoption \(cancelled/);
    console.log(`cluster worker: cancel -> signal aborted ${Date.now() - t2} ms`);
    expect(aborted).toBeInstanceOf(Error);
    await waitFor(() => heard.some((m) => m.startsWith(`c:${held.id}:`)), {
      what: 'event on another node',
    });

    // Graceful close: a running job finishes first.
    let finished = false;
    const slow = new Worker(
      q,
      async () => {
        await sleep(300);
        finished = true;
      },
      { concurrency: 1 },
    );
    cluster.closeAfter(() => slow.close({ timeoutMs: 1000 }));
    await w.close();
    await slow.start();
    await q.add({ n: 9999 });
    await waitFor(() => slow.activeCount === 1, { what: 'slow job running' });
    await slow.close({ timeoutMs: 5_000 });
    expect(finished).toBe(true);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, workers: 0 });
    expect(errors).toEqual([]);
  });

  it('QueueEvents and waitForResult work on the Cluster client (blocking XREAD routed to the slot)', async () => {
    const q = new WorkQueue<{ n: number }, number>(cluster.client, uniqueName('ev'), {
      logger: false,
      storeResults: { ttlMs: 60_000 },
    });
    const events = new QueueEvents(cluster.client, q.name);
    cluster.closeAfter(() => events.close());
    expect(await events.ready()).toBe(true);
    const completed = new Set<string>();
    events.on('completed', (e) => completed.add(e.id));
    const added = await q.addBulk(Array.from({ length: 20 }, (_, n) => ({ data: { n } })));
    const last = added.at(-1)!.id;
    const result = q.waitForResult(last, { timeoutMs: 30_000 });
    const w = new Worker(q, (job) => job.data.n * 2, { concurrency: 5 });
    cluster.closeAfter(() => w.close({ timeoutMs: 1000 }));
    expect(await result).toBe(38);
    await waitFor(() => completed.size === 20, { what: '20 completed events', timeoutMs: 30_000 });
    expect([...completed].sort()).toEqual(added.map((a) => a.id).sort());
    // Payload buckets are named inside the scripts: they share the queue's slot.
    const slot = await cluster.keySlot(q.keys.base);
    expect(await cluster.keySlot(q.keys.dataBucket('1'))).toBe(slot);
  });

  // Last (the tests of a file run in order): an error a client or the Worker swallowed would
  // fail no test above.
  it('no node ever answered CROSSSLOT', async () => {
    const stats = await clusterErrorStats(cluster);
    console.log('cluster: error stats over the whole file', stats);
    expect(stats.CROSSSLOT ?? 0).toBe(0);
  });
});
