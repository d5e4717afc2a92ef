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

/**
 * A queue on a client whose payload reads (the worker's HMGETs by reference, as Buffers) go
 * through `around(read)`, and the warnings its logger got.
 */
function queueAroundPayloadReads(around: (read: () => Promise<unknown>) => Promise<unknown>) {
  const client = fx.client();
  const hooked = new Proxy(client, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (prop !== 'hmgetBuffer' || typeof v !== 'function') return v;
      return (...args: unknown[]) =>
        around(() => (v as (...a: unknown[]) => Promise<unknown>).apply(target, args));
    },
  }) as Redis;
  const warnings: string[] = [];
  const q = fx.queue<{ pad: string }>({ logger: { warn: (m) => warnings.push(m) } }, hooked);
  return { q, warnings };
}

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

  it('payloads larger than a socket read (json and string codecs), inline and by reference, run with their exact data', async () => {
    // Replies are read as Buffers and decoded by the queue (lib/job/codec.ts): a payload spread
    // over several socket reads, with multi-byte characters cut anywhere, decodes whole.
    const big = (i: number) => `${i}:`.padEnd(150_000, 'é€😀');
    const q = fx.queue<{ i: number; pad: string }>();
    const n = 6;
    await q.addBulk(Array.from({ length: n }, (_, i) => ({ data: { i, pad: big(i) } })));
    const bad: number[] = [];
    const seen = new Set<number>();
    worker(
      q,
      (job) => {
        if (job.data.pad !== big(job.data.i)) bad.push(job.data.i);
        seen.add(job.data.i);
      },
      { concurrency: 1, prefetch: 1 },
    );
    await waitFor(() => seen.size === n, { what: `${n} json jobs handled` });
    expect(bad).toEqual([]);
    const s = fx.queue<string>({ codec: 'string' });
    await s.addBulk(Array.from({ length: n }, (_, i) => ({ data: big(i) })));
    const got: string[] = [];
    worker(s, (job) => void got.push(job.data), { concurrency: 2, prefetch: 0 });
    await waitFor(() => got.length === n, { what: `${n} string jobs handled` });
    expect(new Set(got)).toEqual(new Set(Array.from({ length: n }, (_, i) => big(i))));
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
    let cancelNext: string | undefined;
    let cancelled: boolean | undefined;
    // A cancel slipped in just before the worker's payload read.
    const { q, warnings } = queueAroundPayloadReads(async (read) => {
      const id = cancelNext;
      cancelNext = undefined;
      if (id) cancelled = await q.cancel(id);
      return read();
    });
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
    expect(await admin.zcount(q.keys.leased, '-inf', '(+inf')).toBe(0); // (not the pad: LEASE_PAD)
    await w.close();
  });
});

describe('Worker with large payloads: a payload read that fails', () => {
  it('leaves the jobs it leased to the reconcile: each runs once, later', async () => {
    let failNext = false;
    let failed = 0;
    // One payload read (HMGET) failing on demand.
    const { q, warnings } = queueAroundPayloadReads((read) => {
      if (!failNext) return read();
      failNext = false;
      failed++;
      return Promise.reject(new Error('planned read failure'));
    });
    const big = { pad: 'y'.repeat(8_000) };
    const ran: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    // As above: the first job, leased inline, teaches the worker that payloads are large.
    const first = await q.add(big, { id: 'first' });
    const w = worker(
      q,
      async (job) => {
        ran.push(job.id);
        if (job.id === first.id) await gate;
      },
      { concurrency: 1, prefetch: 2 },
    );
    await waitFor(() => ran.length === 1, { what: 'first job started' });
    const ids = ['a', 'b', 'c'];
    for (const id of ids) await q.add(big, { id });
    failNext = true;
    release();
    await waitFor(async () => (await q.counts()).completed === 4, { what: 'all four completed' });
    expect(failed).toBe(1);
    expect(warnings.some((m) => m.includes('lease payloads'))).toBe(true);
    expect([...ran].sort()).toEqual(['a', 'b', 'c', 'first']);
    const counts = await q.counts();
    expect({ leased: counts.leased, pending: counts.pending }).toEqual({ leased: 0, pending: 0 });
    await w.close();
  });
});
