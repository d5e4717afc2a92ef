/**
 * Flow control and queue administration (issue 16): queue-wide pause across workers and
 * instances, paged listings, promote, changePriority, retryDead({ all }), drain, obliterate.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { WorkQueueError } from '../../../lib/index.js';
import { errorOf, sameQueue } from '../../support/core.js';
import { keysButCounters, QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { deferred, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach((e) => console.error('worker error', e));

describe('queue-wide pause', () => {
  it('stops leasing in workers on separate clients; running jobs finish; resume restarts', async () => {
    const q1 = fx.queue<number>();
    const q2 = sameQueue(fx, q1);
    const gate = deferred<void>();
    const started: number[] = [];
    const done: number[] = [];
    const h = async (job: { data: number }) => {
      started.push(job.data);
      await gate.promise;
      done.push(job.data);
    };
    const w1 = worker(q1, h, { concurrency: 2, prefetch: 0 });
    const w2 = worker(q2, h, { concurrency: 2, prefetch: 0 });
    await Promise.all([w1.start(), w2.start()]);
    await q1.addBulk([0, 1, 2, 3].map((data) => ({ data })));
    await waitFor(() => started.length === 4, { what: '4 running' });
    await q1.pause();
    expect(await q2.isPaused()).toBe(true);
    // Adds still queue; nobody leases them (the lease scripts refuse, every worker stopped).
    await q1.addBulk(Array.from({ length: 10 }, (_, i) => ({ data: 10 + i })));
    gate.resolve();
    await waitFor(() => done.length === 4, { what: 'running jobs finished' });
    // Their completes went with fused lease calls, which leased nothing.
    await waitFor(async () => (await q1.counts()).leased === 0, { what: 'completes landed' });
    expect(started).toHaveLength(4);
    expect((await q1.counts()).pending).toBe(10);
    // The pause is stored in Redis: a new instance sees it.
    expect(await sameQueue(fx, q1).isPaused()).toBe(true);
    await q2.resume();
    expect(await q1.isPaused()).toBe(false);
    await waitFor(() => done.length === 14, { what: 'all done after resume' });
  });

  it('a worker started while the queue is paused leases nothing until resume', async () => {
    const q = fx.queue<number>();
    await q.pause();
    await q.pause(); // idempotent
    await q.add(1);
    const seen: number[] = [];
    const w = worker(q, (job) => {
      seen.push(job.data);
    });
    await w.start();
    await waitFor(async () => (await q.counts()).workers === 1);
    expect((await q.counts()).pending).toBe(1);
    expect(seen).toEqual([]);
    await q.resume();
    await waitFor(() => seen.length === 1, { what: 'leased after resume' });
  });
});

describe('paged listings and job admin', () => {
  it('getJobs pages each state in the order the queue takes it', async () => {
    const q = fx.queue<string>();
    await q.add('p5a');
    await q.add('p1a', { priority: 1 });
    await q.add('p9a', { priority: 9, id: 'caller-9' });
    await q.add('p5b');
    await q.add('p1b', { priority: 1 });
    await q.add('d3', { delayMs: 30_000 });
    await q.add('d1', { delayMs: 10_000 });
    await q.add('d2', { delayMs: 20_000 });
    const data = (jobs: Array<{ data?: string }>) => jobs.map((j) => j.data);
    expect(data(await q.getJobs('pending'))).toEqual(['p1a', 'p1b', 'p5a', 'p5b', 'p9a']);
    expect(data(await q.getJobs('pending', { offset: 1, limit: 3 }))).toEqual([
      'p1b',
      'p5a',
      'p5b',
    ]);
    expect(data(await q.getJobs('pending', { offset: 4, limit: 10 }))).toEqual(['p9a']);
    expect(await q.getJobs('pending', { offset: 5 })).toEqual([]);
    const last = (await q.getJobs('pending', { offset: 4 }))[0]!;
    expect(last).toEqual(await q.getJob('caller-9'));
    expect(data(await q.getJobs('delayed'))).toEqual(['d1', 'd2', 'd3']);
    expect(data(await q.getJobs('delayed', { offset: 2, limit: 1 }))).toEqual(['d3']);
    const [long] = await q.lease({ leaseMs: 60_000 });
    const [short] = await q.lease({ leaseMs: 10_000 });
    const leased = await q.getJobs('leased');
    expect(leased.map((j) => j.id)).toEqual([short!.id, long!.id]);
    expect(leased[0]).toEqual(await q.getJob(short!.id));
    await q.deadLetter(long!, 'first');
    await q.deadLetter(short!, 'second');
    expect((await q.getJobs('dead')).map((j) => j.deadReason)).toEqual(['first', 'second']);
    expect(await q.retryDead({ all: true })).toBe(2);
    expect(await q.getJobs('dead')).toEqual([]);
    expect((await q.counts()).pending).toBe(5);
  });

  it('bad input lists every problem', async () => {
    const q = fx.queue();
    const e = (await errorOf(() =>
      q.getJobs('nope' as 'pending', { offset: -1, limit: 1001 }),
    )) as WorkQueueError;
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.problems).toHaveLength(3);
    const p = (await errorOf(() => q.changePriority('', 10))) as WorkQueueError;
    expect(p.code).toBe('INVALID_ARGUMENT');
    expect(p.problems).toHaveLength(2);
    for (const bad of [0, -1, Number.NaN, 1.5]) {
      const r = (await errorOf(() =>
        q.setRateLimit({ max: bad, durationMs: bad }),
      )) as WorkQueueError;
      expect(r.problems).toHaveLength(2);
      expect(((await errorOf(() => q.setGlobalConcurrency(bad))) as WorkQueueError).code).toBe(
        'INVALID_ARGUMENT',
      );
    }
  });

  it('promote runs a delayed job now; changePriority moves pending to the back of its list', async () => {
    const q = fx.queue<string>();
    await q.add('later', { delayMs: 60_000, id: 'later' });
    await q.add('a');
    const { id: b } = await q.add('b', { priority: 3 });
    expect(await q.promote('later')).toBe(true);
    expect(await q.promote('later')).toBe(false); // not delayed any more
    expect((await q.getJob('later'))!.state).toBe('pending');
    expect(await q.changePriority(b, 5)).toBe(true);
    // Promoted to the back of its list (after 'a'); 'b' moved to the back of p5.
    const order = (await q.getJobs('pending')).map((j) => j.data);
    expect(order).toEqual(['a', 'later', 'b']);
    expect(await q.changePriority('later', 0)).toBe(true);
    expect((await q.getJobs('pending')).map((j) => j.data)).toEqual(['later', 'a', 'b']);
    expect((await q.getJob('later'))!.priority).toBe(0);
    const { id: d } = await q.add('d', { delayMs: 60_000 });
    expect(await q.changePriority(d, 2)).toBe(true);
    expect((await q.getJob(d))!).toMatchObject({ state: 'delayed', priority: 2 });
    const [leased] = await q.lease();
    expect(await q.changePriority(leased!.id, 9)).toBe(false);
    expect(await q.changePriority('no-such-job', 1)).toBe(false);
  });

  it('drain removes waiting jobs (delayed on request) in pages, leaving leased ones', async () => {
    const q = fx.queue<number>();
    await q.addBulk(Array.from({ length: 2_500 }, (_, i) => ({ data: i, opts: { id: `c${i}` } })));
    await q.add(-1, { delayMs: 60_000 });
    const [held] = await q.lease();
    expect(await q.drain()).toBe(2_499);
    expect(await q.counts()).toMatchObject({ pending: 0, delayed: 1, leased: 1 });
    expect(await q.getJob('c5')).toBeNull();
    expect((await q.add(5, { id: 'c5' })).added).toBe(true); // caller id freed
    expect(await q.drain({ delayed: true })).toBe(2);
    expect(await q.counts()).toMatchObject({ pending: 0, delayed: 0, leased: 1 });
    expect(await q.complete(held!)).toBe(true);
  });

  it('after obliterate, a lease or a worker from before matches no job or worker after (the counters stay)', async () => {
    const q = fx.queue<string>();
    await q.add('before');
    const [old] = await q.lease();
    const before = await q.registerWorker();
    await q.obliterate({ force: true });
    const { id } = await q.add('after');
    const [lease] = await q.lease();
    expect(lease!.id).toBe(id);
    // Its id, and its lease's seq and token, are new: the old lease completes nothing.
    expect(lease!.id).not.toBe(old!.id);
    expect(lease!.token).not.toBe(old!.token);
    expect(await q.complete(old!, 'from before')).toBe(false);
    expect(await q.getJob(id)).toMatchObject({ state: 'leased' });
    expect(await q.complete(lease!, 'after')).toBe(true);
    expect((await q.getJob(id))!.result).toBe('after');
    expect(await q.registerWorker()).not.toBe(before);
  });

  it('obliterate refuses while workers are live unless forced, then leaves no key but its counters', async () => {
    const q = fx.queue<number>();
    await q.addBulk(Array.from({ length: 2_100 }, (_, i) => ({ data: i })));
    await q.add(1, { delayMs: 60_000 });
    await q.pause();
    const w = worker(q, () => undefined);
    await w.start();
    const e = (await errorOf(() => q.obliterate())) as WorkQueueError;
    expect(e.code).toBe('BAD_STATE');
    expect((await q.counts()).pending).toBe(2_100);
    await w.close();
    await q.obliterate();
    expect(await keysButCounters(q.client, q)).toEqual([]);
    expect(await q.isPaused()).toBe(false);
    const w2 = worker(q, () => undefined);
    await w2.start();
    await q.obliterate({ force: true });
    expect((await q.counts()).workers).toBe(0);
  });
});
