/**
 * A hand-off never jumps the line: a worker whose idle wait took a hand-off and has no room left
 * is no longer parked (adds queue their jobs instead of handing them to a worker that cannot
 * start them — which broke FIFO, a RateLimitError's hold with prefetch 0, and left jobs "leased"
 * while another ran), and an add hands off no job past jobs of its priority already pending.
 * A hand-off an add made while such a worker was still marked parked goes back to its pending
 * list when the worker finds it has no room (not left "leased" to nobody).
 */
import { afterAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { RateLimitError, WorkQueue } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { redisProxy } from '../../support/redis-proxy.js';
import { waitFor } from '../../support/wait.js';
import { deferred, waitParked, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

const state = async (q: WorkQueue<unknown>, id: string) => (await q.getJob(id))?.state;

it('a busy worker (no room) that took a hand-off is not parked: the next add waits pending', async () => {
  const q = fx.queue<string>();
  const gate = deferred<string>();
  const started: string[] = [];
  const w = worker(
    q,
    async (job) => {
      started.push(job.data);
      return job.data === 'a' ? gate.promise : job.data;
    },
    { concurrency: 1, prefetch: 0 },
  );
  await w.start();
  await waitParked(fx.client(), q, w.workerId);
  const a = await q.add('a');
  await waitFor(() => started.includes('a'), { what: 'a started (handed off)' });
  // Adopted: its lease names the worker.
  await waitFor(
    async () =>
      String(await fx.client().hget(q.keys.leaseHolders, a.id)).endsWith(`:${w.workerId}`),
    { what: 'a adopted' },
  );
  expect(await fx.client().zscore(q.keys.key('parked'), w.workerId)).toBeNull();
  const b = await q.add('b');
  expect(await state(q, b.id)).toBe('pending');
  gate.resolve('a');
  await waitFor(() => started.includes('b'), { what: 'b started' });
  expect(started).toEqual(['a', 'b']);
});

it("a RateLimitError's hold is exact with prefetch 0: a job added while the held one ran waits it out", async () => {
  const q = fx.queue<string>();
  const gate = deferred<void>();
  const started: Array<[string, number]> = [];
  let limited = false;
  const w = worker(
    q,
    async (job) => {
      started.push([job.data, Date.now()]);
      if (job.data === 'r1' && !limited) {
        limited = true;
        await gate.promise;
        throw new RateLimitError(1_000);
      }
      return job.data;
    },
    { concurrency: 1, prefetch: 0 },
  );
  await w.start();
  await waitParked(fx.client(), q, w.workerId);
  const r1 = await q.add('r1');
  await waitFor(() => started.length === 1, { what: 'r1 started' });
  await waitFor(
    async () =>
      String(await fx.client().hget(q.keys.leaseHolders, r1.id)).endsWith(`:${w.workerId}`),
    { what: 'r1 adopted' },
  );
  await q.add('r2');
  const thrown = Date.now();
  gate.resolve();
  await waitFor(() => started.length === 3, { what: 'r1 again and r2', timeoutMs: 10_000 });
  // r1 went back to the front: it runs first after the hold, then r2; neither inside it.
  expect(started.slice(1).map(([d]) => d)).toEqual(['r1', 'r2']);
  for (const [, at] of started.slice(1)) expect(at - thrown).toBeGreaterThanOrEqual(950);
});

it('an add hands off no job past jobs of its priority already pending (FIFO)', async () => {
  const q = fx.queue<string>();
  const admin = fx.client();
  // A worker marked parked that pops nothing: the first add's hand-off stays in the wake list.
  await admin.zadd(q.keys.key('parked'), Date.now() + 60_000, 'w-fake');
  const first = await q.add('first');
  expect(await state(q, first.id)).toBe('leased'); // handed off
  const second = await q.add('second'); // a wake-up waits: queued
  expect(await state(q, second.id)).toBe('pending');
  // The parked worker pops the hand-off (its wait ends; its next call would unpark it).
  expect(await admin.lpop(q.keys.wake)).toMatch(/^h/);
  const third = await q.add('third');
  const withId = await q.add('fourth', { id: 'caller-4' }); // add.lua, not add_plain
  expect(await state(q, third.id)).toBe('pending');
  expect(await state(q, withId.id)).toBe('pending');
  const leased = await q.lease({ count: 10 });
  expect(leased.map((j) => j.data)).toEqual(['second', 'third', 'fourth']);
});

it('a hand-off made before the full worker unparked goes back pending, not leased to nobody', async () => {
  // The worker's connections go through a proxy that holds its commands on demand: its
  // adoption call (which unparks it, full) then reaches Redis after the next add.
  let holding = false;
  const releases: Array<() => void> = [];
  const proxy = await redisProxy(() => {
    const held: Buffer[] = [];
    let flushing = false;
    return {
      command(chunk, c) {
        if (!holding && !flushing) return c.toRedis(chunk);
        held.push(chunk);
        if (!flushing) {
          flushing = true;
          releases.push(() => {
            for (const h of held.splice(0)) c.toRedis(h);
            flushing = false;
          });
        }
      },
    };
  });
  const client = new Redis(proxy.url);
  try {
    const q = fx.queue<string>({}, client);
    const producer = new WorkQueue<string>(fx.client(), q.name, {
      logger: false,
      prefix: q.options.prefix,
    });
    const gate = deferred<string>();
    const started: string[] = [];
    const w = worker(
      q,
      async (job) => {
        started.push(job.data);
        return job.data === 'a' ? gate.promise : job.data;
      },
      { concurrency: 1, prefetch: 0 },
    );
    await w.start();
    await waitParked(fx.client(), q, w.workerId);
    const admin = fx.client();
    await waitFor(async () => / flags=b .* cmd=blmove /.test(String(await admin.client('LIST'))), {
      what: "the worker's idle wait (BLMOVE) blocked",
    });
    holding = true;
    await producer.add('a');
    await waitFor(() => started.includes('a'), { what: 'a started (handed off)' });
    // Its adoption is held: still marked parked, so b is handed off too.
    const b = await producer.add('b');
    expect(await state(producer, b.id)).toBe('leased');
    holding = false;
    for (const release of releases.splice(0)) release();
    await waitFor(async () => (await state(producer, b.id)) === 'pending', {
      what: 'b back in its pending list once the worker, full, unparked',
    });
    // No hand-off entry left in the wake list (a plain wake-up may be).
    for (const e of await admin.lrange(q.keys.wake, 0, -1)) expect(e).not.toMatch(/^h/);
    gate.resolve('a');
    await waitFor(() => started.includes('b'), { what: 'b started' });
    expect(started).toEqual(['a', 'b']);
    await w.close();
    await producer.close();
  } finally {
    await proxy.close();
    client.disconnect();
  }
});
