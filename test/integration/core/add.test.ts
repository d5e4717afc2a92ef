import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { NonRetryableError, WorkQueue } from '../../../lib/index.js';
import { commandCalls, countCommands, redisNow } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('add: caller ids dedupe while the job exists', () => {
  it('a second add with the same caller id resolves { added: false } and changes nothing', async () => {
    const q = fx.queue<{ v: number }>();
    expect(await q.add({ v: 1 }, { id: 'order-1', name: 'first', priority: 3 })).toEqual({
      id: 'order-1',
      added: true,
    });
    expect(await q.add({ v: 2 }, { id: 'order-1', name: 'second', priority: 0 })).toEqual({
      id: 'order-1',
      added: false,
    });
    // In a batch too.
    expect(await q.addBulk([{ data: { v: 3 }, opts: { id: 'order-1' } }])).toEqual([
      { id: 'order-1', added: false },
    ]);
    const job = await q.getJob('order-1');
    expect(job).toMatchObject({
      state: 'pending',
      data: { v: 1 },
      name: 'first',
      priority: 3,
    });
    expect(await q.counts()).toMatchObject({
      pending: 1,
      pendingByPriority: [0, 0, 0, 1, 0, 0, 0, 0, 0, 0],
    });
    const [leased] = await q.lease({ count: 10, leaseMs: 5_000 });
    expect(leased).toMatchObject({ id: 'order-1', data: { v: 1 }, name: 'first' });
    // Still deduped while leased.
    expect(await q.add({ v: 4 }, { id: 'order-1' })).toEqual({ id: 'order-1', added: false });
    expect(await q.lease({ count: 10, leaseMs: 5_000 })).toEqual([]);
  });

  it('after completion the id stays taken for dedupeWindowMs, then clean() frees it', async () => {
    // Not kept once completed (keepCompleted: false): only the window holds the id.
    const q = fx.queue<{ v: number }>({ dedupeWindowMs: 300, keepCompleted: false });
    await q.add({ v: 1 }, { id: 'x' });
    const [a] = await q.lease({ leaseMs: 5_000 });
    expect(await q.complete(a!)).toBe(true);
    // "Sign up twice, one welcome email": within the window, even after the first completed.
    expect(await q.add({ v: 2 }, { id: 'x' })).toEqual({ id: 'x', added: false });
    expect(await q.getJob('x')).toEqual({ id: 'x', state: 'completed' });
    expect(await q.cancel('x')).toBe(false);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0 });
    // After the window: free again (even before clean() drops the entry).
    await waitFor(async () => (await q.add({ v: 3 }, { id: 'x' })).added, {
      what: 'the window to end',
    });
    expect((await q.getJob('x'))!.data).toEqual({ v: 3 });
    // clean() drops entries past their window.
    await q.add({ v: 1 }, { id: 'y' });
    const jobs = await q.lease({ count: 10, leaseMs: 5_000 });
    for (const j of jobs) await q.complete(j);
    // The two windows end at their own completions: one clean() may free them one at a time.
    let freed = 0;
    await waitFor(
      async () => {
        freed += (await q.clean()).callerIdsFreed;
        return freed >= 2;
      },
      { what: 'clean to free the caller ids' },
    );
    expect(freed).toBe(2);
    expect(await q.getJob('y')).toBeNull();
  });

  it('the id can be added again after completion (dedupeWindowMs 0), after cancel, and after a dead job is purged', async () => {
    const q = fx.queue<{ v: number }>({ dedupeWindowMs: 0 });
    // completed
    await q.add({ v: 1 }, { id: 'x' });
    const [a] = await q.lease({ leaseMs: 5_000 });
    expect(await q.complete(a!)).toBe(true);
    expect(await q.add({ v: 2 }, { id: 'x' })).toEqual({ id: 'x', added: true });
    expect((await q.getJob('x'))!.data).toEqual({ v: 2 });

    // cancelled (while pending)
    expect(await q.cancel('x')).toBe(true);
    expect(await q.getJob('x')).toBeNull();
    expect(await q.add({ v: 3 }, { id: 'x' })).toEqual({ id: 'x', added: true });
    expect((await q.getJob('x'))!.data).toEqual({ v: 3 });

    // dead, then purged
    const [b] = await q.lease({ leaseMs: 5_000 });
    expect(b!.data).toEqual({ v: 3 });
    expect(await q.fail(b!, new NonRetryableError('nope'))).toBe('dead');
    expect(await q.add({ v: 4 }, { id: 'x' })).toEqual({ id: 'x', added: false });
    expect((await q.getJob('x'))!.state).toBe('dead');
    expect(await q.purgeDead('x')).toBe(1);
    expect(await q.add({ v: 5 }, { id: 'x' })).toEqual({ id: 'x', added: true });
    const job = await q.getJob('x');
    expect(job).toMatchObject({ state: 'pending', data: { v: 5 }, attemptsMade: 0 });
    const [c] = await q.lease({ count: 10, leaseMs: 5_000 });
    expect(c).toMatchObject({ id: 'x', data: { v: 5 }, attempt: 1 });
  });

  it('dedupes within one batch too, and against a leased job that is then cancelled', async () => {
    const q = fx.queue<string>();
    const res = await q.addBulk([
      { data: 'first', opts: { id: 'a' } },
      { data: 'second', opts: { id: 'a' } },
      { data: 'other', opts: { id: 'b' } },
    ]);
    expect(res).toEqual([
      { id: 'a', added: true },
      { id: 'a', added: false },
      { id: 'b', added: true },
    ]);
    expect((await q.getJob('a'))!.data).toBe('first');
    expect((await q.counts()).pending).toBe(2);
    const [a] = await q.lease({ leaseMs: 10_000 });
    expect(await q.cancel('a')).toBe(true);
    expect(await q.add('third', { id: 'a' })).toEqual({ id: 'a', added: true });
    // The cancelled incarnation's lease cannot complete the new one.
    expect(await q.complete(a!)).toBe(false);
    expect(await q.getJob('a')).toMatchObject({ state: 'pending', data: 'third' });
  });

  it('default ids are short, unique counters', async () => {
    const q = fx.queue();
    const res = await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ data: i })));
    expect(res.map((r) => r.id)).toEqual(['1', '2', '3', '4', '5']);
    expect(res.every((r) => r.added)).toBe(true);
  });
});

describe('addBulk: 10,000 jobs in a few round trips', () => {
  let server: RedisHandle;
  let client: Redis;
  let stats: Redis;

  beforeAll(async () => {
    // A private server, so INFO commandstats counts only what this test sends.
    server = await startRedis();
    client = new Redis(server.url);
    stats = new Redis(server.url);
  });
  afterAll(async () => {
    client.disconnect();
    stats.disconnect();
    await server.dispose();
  });

  it('sends at most 10 commands for 10,000 jobs and stores them all in order', async () => {
    const q = new WorkQueue<{ i: number }>(client, 'bulk', { logger: false });
    await q.counts(); // the one-time start-up check (INFO) and script load happen here
    const before = await commandCalls(stats, ['eval', 'evalsha']);
    const sent = countCommands(client);
    const jobs = Array.from({ length: 10_000 }, (_, i) => ({ data: { i } }));
    const res = await q.addBulk(jobs);
    // Scripts the server ran (server-side count) and commands the client sent (any kind).
    const scripts = (await commandCalls(stats, ['eval', 'evalsha'])) - before;
    const all = sent.count;
    expect(res).toHaveLength(10_000);
    expect(res.every((r) => r.added)).toBe(true);
    expect(scripts).toBeGreaterThanOrEqual(1);
    expect(scripts).toBeLessThanOrEqual(10);
    expect(all).toBeLessThanOrEqual(10);
    expect((await q.counts()).pending).toBe(10_000);
    const firstTen = await q.lease({ count: 10, leaseMs: 5_000 });
    expect(firstTen.map((j) => j.data.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

describe('priorities and order', () => {
  it('0 is highest, 9 lowest, default 5; FIFO within a priority', async () => {
    const q = fx.queue<string>();
    await q.add('p5-a');
    await q.add('p9-a', { priority: 9 });
    await q.add('p0-a', { priority: 0 });
    await q.add('p5-b', { priority: 5 });
    await q.add('p3-a', { priority: 3 });
    await q.add('p0-b', { priority: 0 });
    await q.add('p9-b', { priority: 9 });
    await q.add('p5-c');
    expect((await q.counts()).pendingByPriority).toEqual([2, 0, 0, 1, 0, 3, 0, 0, 0, 2]);
    const first = await q.lease({ count: 3, leaseMs: 5_000 });
    expect(first.map((j) => j.data)).toEqual(['p0-a', 'p0-b', 'p3-a']);
    expect(first.map((j) => j.priority)).toEqual([0, 0, 3]);
    const rest: string[] = [];
    for (;;) {
      const [j] = await q.lease({ leaseMs: 5_000 });
      if (!j) break;
      rest.push(j.data);
    }
    expect(rest).toEqual(['p5-a', 'p5-b', 'p5-c', 'p9-a', 'p9-b']);
    expect((await q.getJob('1'))!.priority).toBe(5);
  });
});

describe('delayed jobs', () => {
  it('delayMs: not leasable before due; promoted by lease itself when due', async () => {
    const q = fx.queue<string>();
    const t0 = await redisNow(fx.client());
    await q.add('later', { delayMs: 1_000 });
    await q.add('now');
    const job = await q.getJob('1');
    expect(job!.state).toBe('delayed');
    expect(job!.at).toBeGreaterThanOrEqual(t0 + 1_000);
    expect(job!.at).toBeLessThanOrEqual(t0 + 1_000 + 1_000);
    const first = await q.lease({ count: 10, leaseMs: 5_000 });
    expect(first.map((j) => j.data)).toEqual(['now']);
    expect(await q.counts()).toMatchObject({ delayed: 1, pending: 0, leased: 1 });
    const c = fx.client();
    // Leased only once Redis time is at its due time (lease promotes it; nobody called clean):
    // a lease that found nothing ran before it; one that returns it, at or after it.
    let empty = 0;
    const { later, after } = await waitFor(
      async () => {
        const [got] = await q.lease({ count: 10, leaseMs: 5_000 });
        if (!got) return void empty++;
        return { later: got, after: await redisNow(c) };
      },
      { what: 'the delayed job to become leasable', timeoutMs: 5_000, intervalMs: 20 },
    );
    expect(later.data).toBe('later');
    expect(after).toBeGreaterThanOrEqual(job!.at!);
    expect(empty).toBeGreaterThan(0);
    expect(await q.counts()).toMatchObject({ delayed: 0, leased: 2 });
  });

  it('delayed jobs due at the same time keep FIFO order when promoted (ids 1..12)', async () => {
    const q = fx.queue<number>();
    const c = fx.client();
    const runAt = (await redisNow(c)) + 80;
    await q.addBulk(Array.from({ length: 12 }, (_, i) => ({ data: i, opts: { runAt } })));
    expect((await q.counts()).delayed).toBe(12);
    await waitFor(async () => (await redisNow(c)) > runAt, { what: 'Redis time past runAt' });
    const jobs = await q.lease({ count: 20, leaseMs: 5_000 });
    expect(jobs.map((j) => j.data)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it('runAt in Redis time: future is delayed, past is pending at once', async () => {
    const q = fx.queue<string>();
    const now = await redisNow(fx.client());
    await q.add('future', { runAt: now + 60_000 });
    await q.add('past', { runAt: new Date(now - 1_000) });
    expect((await q.getJob('1'))!).toMatchObject({ state: 'delayed', at: now + 60_000 });
    expect((await q.getJob('2'))!.state).toBe('pending');
    const jobs = await q.lease({ count: 10, leaseMs: 5_000 });
    expect(jobs.map((j) => j.data)).toEqual(['past']);
  });

  it('clean promotes due delayed jobs (to the back of their priority)', async () => {
    const q = fx.queue<string>();
    const c = fx.client();
    await q.add('delayed', { delayMs: 1_000 });
    await q.add('waiting');
    const due = (await q.getJob('1'))!.at!;
    // Not due yet (for a second): clean leaves it alone.
    expect((await q.clean()).promoted).toBe(0);
    expect(await q.counts()).toMatchObject({ delayed: 1, pending: 1 });
    await waitFor(async () => (await redisNow(c)) > due, { what: 'Redis time past the due time' });
    const report = await q.clean();
    expect(report.promoted).toBe(1);
    expect(await q.counts()).toMatchObject({ delayed: 0, pending: 2 });
    expect((await q.getJob('1'))!.state).toBe('pending');
    const jobs = await q.lease({ count: 10, leaseMs: 5_000 });
    expect(jobs.map((j) => j.data)).toEqual(['waiting', 'delayed']);
  });
});

describe('add: a throw while reading its arguments', () => {
  it('rejects the returned promise (add is not async: nothing escapes synchronously) and adds nothing', async () => {
    const q = fx.queue();
    const opts = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('options unreadable');
        },
      },
    );
    let result: Promise<unknown> | undefined;
    expect(() => (result = q.add({ v: 1 }, opts))).not.toThrow();
    await expect(result).rejects.toThrow('options unreadable');
    expect((await q.counts()).pending).toBe(0);
  });
});
