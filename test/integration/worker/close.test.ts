/**
 * Worker runtime: graceful close. Running jobs get up to `timeoutMs` to finish; what is left is
 * released to the FRONT of the queue (no attempt counted) and its signal aborted; the worker
 * deregisters. close() always resolves, also with Redis gone, and is idempotent.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../../lib/index.js';
import { endNow } from '../../../lib/redis/connection.js';
import { uniqueName } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { connectedClients, startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';
import {
  deadline,
  gatedHandler,
  recordEvents,
  workersClosedAfterEach,
} from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

/** Pending timers and immediates of this process (ours and Jest's). */
const activeTimers = () =>
  process.getActiveResourcesInfo().filter((r) => r === 'Timeout' || r === 'Immediate').length;

describe('Worker.close()', () => {
  it('waits for a job that finishes within the timeout: completed, nothing released', async () => {
    const q = fx.queue<string>();
    let signal: AbortSignal | undefined;
    let startedAt = 0;
    const w = worker(q, async (job) => {
      startedAt = Date.now();
      signal = job.signal;
      await sleep(400);
      return 'finished';
    });
    const events = recordEvents(w);
    const { id } = await q.add('short');
    await waitFor(() => signal, { what: 'job started' });
    const t0 = Date.now();
    await w.close({ timeoutMs: 5_000 });
    // It returned once the job's 400 ms were over (counted from the handler's start: this
    // process may notice the start late), well before its timeout.
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(390);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(events.map(([e, , r]) => [e, r])).toEqual([['completed', 'finished']]);
    expect(signal!.aborted).toBe(false);
    expect(await q.getJob(id)).toMatchObject({ state: 'completed', attemptsMade: 1 });
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, workers: 0 });
  });

  it('releases a job that outlasts the timeout to the FRONT, aborts its signal, deregisters', async () => {
    const q = fx.queue<string>();
    const { runs, handler } = gatedHandler<string>();
    // No prefetch, so that b and c stay pending (prefetched jobs are released by close too).
    const w = worker(q, handler, { concurrency: 1, prefetch: 0 });
    const events = recordEvents(w);
    const a = await q.add('a');
    await waitFor(() => runs.length === 1, { what: 'a started' });
    await q.addBulk([{ data: 'b' }, { data: 'c' }]);
    expect(await q.counts()).toMatchObject({ pending: 2, leased: 1, workers: 1 });

    const t0 = Date.now();
    await deadline(w.close({ timeoutMs: 300 }), 5_000, 'close');
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(280);
    const { job, gate } = runs[0]!;
    expect(job.signal.aborted).toBe(true);
    expect(job.signal.reason).toMatchObject({ code: 'LEASE_LOST', message: 'worker closing' });
    expect(await q.counts()).toMatchObject({ pending: 3, leased: 0, workers: 0 });
    expect(await q.getJob(a.id)).toMatchObject({
      state: 'pending',
      attemptsMade: 0,
      leaseExpiries: 0,
    });
    // First in line again, and the attempt was not counted.
    const [next] = await q.lease({ count: 1 });
    expect(next).toMatchObject({ id: a.id, data: 'a', attempt: 1 });

    // The handler's late return changes nothing.
    gate.resolve('too late');
    await sleep(100); // time must pass for a (wrong) complete to be sent; none may be
    expect(events).toEqual([]);
    expect(runs).toHaveLength(1);
    expect(await q.getJob(a.id)).toMatchObject({ state: 'leased' });
    expect(await q.complete(next!)).toBe(true);
  });

  it('gives back jobs Redis leased to it that it never heard of (a lease reply lost, or answered after its timeout): pending at once, not when their lease lapses', async () => {
    const q = fx.queue<string>();
    const w = worker(q, () => 'done', { concurrency: 1, prefetch: 0 });
    await w.start();
    w.pause(); // (not parked: the add hands nothing off to it)
    const { id } = await q.add('x');
    // A lease the worker never got the reply of: Redis counts the job as this worker's.
    const [stray] = await q.lease({ count: 1, leaseMs: 60_000, workerId: w.workerId });
    expect(stray?.id).toBe(id);
    await deadline(w.close(), 5_000, 'close');
    expect(await q.getJob(id)).toMatchObject({ state: 'pending', attemptsMade: 0 });
    expect(await q.counts()).toMatchObject({ pending: 1, leased: 0, workers: 0 });
  });

  it('a timeoutMs that is not 0..2^31-1 ms rejects INVALID_ARGUMENT and closes nothing', async () => {
    const q = fx.queue<string>();
    const done: string[] = [];
    const w = worker(q, (job) => {
      done.push(job.data);
    });
    await w.start();
    for (const timeoutMs of [Infinity, Number.NaN, -1, 3e9, '5' as unknown as number]) {
      await expect(w.close({ timeoutMs })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    await q.add('after');
    await waitFor(() => done.includes('after'), { what: 'the worker still working' });
    await w.close({ timeoutMs: 0 });
  });

  it('is idempotent: every call resolves the same close', async () => {
    const q = fx.queue<string>();
    const { runs, handler } = gatedHandler<string>();
    const w = worker(q, handler);
    await q.add('x');
    await waitFor(() => runs.length === 1, { what: 'started' });
    const p1 = w.close({ timeoutMs: 200 });
    const p2 = w.close({ timeoutMs: 60_000 });
    expect(p2).toBe(p1);
    await deadline(Promise.all([p1, p2]), 5_000, 'both closes');
    await deadline(w.close(), 1_000, 'a third close');
    expect(runs[0]!.job.signal.aborted).toBe(true);
    expect(await q.counts()).toMatchObject({ pending: 1, leased: 0, workers: 0 });
  });

  it('resolves when called before start() has finished', async () => {
    const q = fx.queue<string>();
    const w = worker(q, () => 'x');
    await deadline(w.close(), 5_000, 'close during start');
    expect(await q.counts()).toMatchObject({ workers: 0, leased: 0 });
    // Closed for good: a job added now stays pending.
    await q.add('after');
    await sleep(200); // time must pass: nothing may lease it
    expect(await q.counts()).toMatchObject({ pending: 1, leased: 0 });
  });
});

describe('Worker.close() on a private Redis', () => {
  let redis: RedisHandle;
  let admin: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url);
  });
  afterAll(async () => {
    admin.disconnect();
    await redis.dispose();
  });

  const connected = () => connectedClients(admin);

  it.each([
    ['after start', true],
    ['during start', false],
  ])('leaves no connection open (%s)', async (_label, awaitStart) => {
    const base = await connected();
    const client = new Redis(redis.url);
    const q = new WorkQueue<string>(client, uniqueName(), { logger: false });
    const w = new Worker(q, () => 'x', { concurrency: 4 });
    if (awaitStart) {
      await w.start();
      await q.add('x');
      await waitFor(async () => (await q.counts()).pending === 0, { what: 'job taken' });
    }
    await deadline(w.close(), 5_000, 'close');
    await client.quit();
    await waitFor(async () => (await connected()) === base, {
      what: `connections back to ${base}`,
      timeoutMs: 3_000,
    });
  });

  it('resolves within a few seconds when Redis is unreachable', async () => {
    const baseline = activeTimers();
    const client = new Redis(redis.url);
    client.on('error', () => undefined);
    const q = new WorkQueue<string>(client, uniqueName(), { logger: false });
    const { runs, handler } = gatedHandler<string>();
    const w = new Worker(q, handler, { concurrency: 2 });
    const errors: unknown[] = [];
    w.on('error', (e) => errors.push(e));
    await q.add('running');
    await waitFor(() => runs.length === 1, { what: 'job started' });

    await redis.kill();
    const t0 = Date.now();
    await deadline(w.close({ timeoutMs: 500 }), 5_000, 'close with Redis gone');
    const took = Date.now() - t0;
    console.log(`close({ timeoutMs: 500 }) with Redis killed resolved after ${took} ms`);
    expect(runs[0]!.job.signal.aborted).toBe(true);
    // It says what it could not do.
    expect(errors.map((e) => String(e))).toEqual(
      expect.arrayContaining([expect.stringMatching(/could not release 1 job/)]),
    );
    await redis.restart();
    // (Disconnecting a client while it waits to reconnect leaves an ioredis timer running.)
    await waitFor(() => client.status === 'ready', { what: 'client reconnected' });
    await client.quit();
    // The worker closed its connections while they waited to reconnect (ioredis then keeps a
    // 2 s timer each); nothing else of it may be left.
    await waitFor(() => activeTimers() <= baseline, {
      what: `timers back to ${baseline} (now ${activeTimers()})`,
      timeoutMs: 4_000,
      intervalMs: 100,
    });
  });
  it('reports what Redis did not answer once, in close(); nothing after it resolved', async () => {
    const client = new Redis(redis.url);
    client.on('error', () => undefined);
    const q = new WorkQueue<string>(client, uniqueName(), { logger: false });
    const { runs, handler } = gatedHandler<string>();
    const w = new Worker(q, handler, { concurrency: 2 });
    const errors: string[] = [];
    w.on('error', (e) => errors.push(String(e)));
    await q.add('running');
    await waitFor(() => runs.length === 1, { what: 'job started' });

    await redis.kill();
    await deadline(w.close({ timeoutMs: 200 }), 5_000, 'close with Redis gone');
    expect(errors).toEqual([
      expect.stringMatching(/could not release 1 job/),
      expect.stringMatching(
        /close: Redis did not answer within 3000 ms: a job whose outcome was not told runs again once its lease lapses/,
      ),
    ]);
    // Its calls queued on the connection fail when it closes next (as in an app's shutdown): unreported.
    endNow(client);
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    expect(errors).toHaveLength(2);
    await redis.restart();
  });
});

describe('Worker.close() with Redis gone while idle', () => {
  it('leaves no timer behind (the idle wait ends with close)', async () => {
    const redis = await startRedis();
    const baseline = activeTimers();
    const client = new Redis(redis.url);
    client.on('error', () => undefined);
    // Calls left in flight with Redis gone end after commandTimeoutMs: within the wait below.
    const q = new WorkQueue<string>(client, uniqueName(), {
      logger: false,
      commandTimeoutMs: 1_000,
    });
    // Idle, blocked on Redis with a long fallback timeout.
    const w = new Worker(q, () => 'x', { concurrency: 2, idleTimeoutMs: 60_000 });
    w.on('error', () => undefined);
    await w.start();
    const probe = new Redis(redis.url);
    await waitFor(async () => /^blocked_clients:1/m.test(await probe.info('clients')), {
      what: 'worker blocked in BLPOP',
    });
    await probe.quit();

    await redis.kill();
    try {
      await deadline(w.close({ timeoutMs: 500 }), 5_000, 'close with Redis gone');
      client.disconnect();
      // ioredis keeps a 2 s timer per connection closed while it waited to reconnect; nothing
      // of the worker's may outlive close() (its idle wait had a 63 s timer).
      await waitFor(() => activeTimers() <= baseline, {
        what: `timers back to ${baseline} (now ${activeTimers()})`,
        timeoutMs: 4_000,
        intervalMs: 100,
      });
    } finally {
      await redis.dispose();
    }
  });
  it("a handler going on after close() gave its job back: its job's calls answer false", async () => {
    const client = new Redis(fx.client().options);
    const q = fx.queue<string>({}, client);
    const { runs, handler } = gatedHandler<string>();
    const w = worker(q, handler, { concurrency: 1, prefetch: 0 });
    await q.add('a');
    await waitFor(() => runs.length === 1, { what: 'a started' });
    await deadline(w.close({ timeoutMs: 0 }), 5_000, 'close');
    // As an app's shutdown does next: its connections go.
    client.disconnect();
    const { job } = runs[0]!;
    const late = await Promise.allSettled([
      job.progress(1),
      job.extend(),
      job.updateData('b'),
      job.log('after'),
    ]);
    expect(late).toEqual(Array(4).fill({ status: 'fulfilled', value: false }));
  });
});
