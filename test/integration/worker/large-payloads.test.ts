/**
 * Large payloads: a Worker leasing jobs whose payloads average 2 KiB or more leases them by
 * reference (lib/worker/lease-loop.ts): the lease script replies without the payloads and the
 * worker reads them with HMGET behind the call (lib/queue/leases.ts). Every job still runs once
 * with its exact payload, and a job cancelled between the lease and the read is not run.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

/** Watch the commands clients send (not those scripts run): HMGETs of payload buckets. */
async function watchClientHmgets(
  prefix: string,
): Promise<{ count: () => number; stop: () => void }> {
  const monitor = await fx.client().monitor();
  let n = 0;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (
      !source.includes('lua') &&
      args[0]?.toLowerCase() === 'hmget' &&
      args[1]?.startsWith(prefix)
    )
      n++;
  });
  return { count: () => n, stop: () => void monitor.disconnect() };
}

describe('Worker with large payloads (leases by reference)', () => {
  it('200 jobs of ~4 KB (json) run once each with their exact data; payloads read by HMGET', async () => {
    const q = fx.queue<{ i: number; pad: string }>();
    const hmgets = await watchClientHmgets(q.keys.base);
    const n = 200;
    await q.addBulk(
      Array.from({ length: n }, (_, i) => ({ data: { i, pad: `${i}:`.padEnd(4_000, 'é') } })),
    );
    const seen = new Map<number, number>();
    let bad = 0;
    worker(
      q,
      (job) => {
        if (job.data.pad !== `${job.data.i}:`.padEnd(4_000, 'é')) bad++;
        seen.set(job.data.i, (seen.get(job.data.i) ?? 0) + 1);
      },
      { concurrency: 4, prefetch: 2 },
    );
    await waitFor(async () => (await q.counts()).completed === n, { what: `${n} completed` });
    hmgets.stop();
    expect(bad).toBe(0);
    expect(seen.size).toBe(n);
    expect([...seen.values()].every((c) => c === 1)).toBe(true);
    // The first lease calls carry the payloads inline; later ones go by reference.
    expect(hmgets.count()).toBeGreaterThan(0);
  });

  it("codec 'buffer': exact bytes by reference", async () => {
    const q = fx.queue<Buffer>({ codec: 'buffer' });
    const n = 60;
    const payload = (i: number) => Buffer.alloc(3_000, i % 251);
    await q.addBulk(Array.from({ length: n }, (_, i) => ({ data: payload(i) })));
    const got: Buffer[] = [];
    worker(q, (job) => void got.push(job.data), { concurrency: 2, prefetch: 1 });
    await waitFor(() => got.length === n, { what: `${n} handled` });
    const want = new Set(Array.from({ length: n }, (_, i) => payload(i).toString('hex')));
    expect(new Set(got.map((b) => b.toString('hex')))).toEqual(want);
  });

  it('a job cancelled between the lease call and the payload read is not run, nor held', async () => {
    const admin = fx.client();
    const client = fx.client();
    let cancelNext: string | undefined;
    let cancelled: boolean | undefined;
    // The queue's client, with a cancel slipped in just before the worker's payload read.
    const spliced = new Proxy(client, {
      get(target, prop, receiver) {
        const v: unknown = Reflect.get(target, prop, receiver);
        if (prop !== 'hmget' || typeof v !== 'function') return v;
        return async (...args: unknown[]) => {
          const id = cancelNext;
          cancelNext = undefined;
          if (id) cancelled = await q.cancel(id);
          return (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      },
    }) as Redis;
    const warnings: string[] = [];
    const q = fx.queue<{ pad: string }>({ logger: { warn: (m) => warnings.push(m) } }, spliced);
    const big = { pad: 'x'.repeat(8_000) };
    const ran: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // Waiting before the worker starts, the first job is leased (not handed off): it teaches the
    // worker that payloads are large, so its next lease goes by reference.
    const first = await q.add(big, { id: 'first' });
    const w = worker(
      q,
      async (job) => {
        ran.push(job.id);
        await gate;
      },
      { concurrency: 1, prefetch: 0 },
    );
    await waitFor(() => ran.length === 1, { what: 'first job started' });
    const victim = await q.add(big, { id: 'victim' });
    cancelNext = victim.id;
    const after = await q.add(big, { id: 'after' });
    release();
    await waitFor(async () => (await q.counts()).completed === 2, { what: 'two completed' });
    expect(ran).toEqual([first.id, after.id]);
    expect(cancelled).toBe(true); // by the payload read of the lease that took it
    expect(await q.getJob(victim.id)).toBeNull();
    expect(warnings).toEqual([]); // not taken for an undecodable job (dead-lettered)
    const counts = await q.counts();
    expect({ leased: counts.leased, pending: counts.pending }).toEqual({ leased: 0, pending: 0 });
    expect(await admin.zcard(q.keys.leased)).toBe(0);
    await w.close();
  });
});
