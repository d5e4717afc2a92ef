/**
 * Timestamps on every job (issue 25, item 1), in Redis time: addedAt (add, addBulk, a schedule
 * tick, rerun), startedAt (the current or last lease; a hand-off's is its add), finishedAt
 * (completed and kept, dead-lettered), attemptsMade and processedBy — in getJob, getJobs,
 * listDead and the Job a handler gets.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { NonRetryableError, Worker, type Job } from '../../../lib/index.js';
import { inOrder, redisNow } from '../../support/history.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('timestamps', () => {
  it('a job carries addedAt, then startedAt and processedBy while leased, then finishedAt and attemptsMade once completed', async () => {
    const redis = fx.client();
    const q = fx.queue<{ n: number }>({ backoff: { type: 'fixed', delayMs: 0 } });
    const t0 = await redisNow(redis);
    const { id } = await q.add({ n: 1 });
    const pending = await q.getJob(id);
    expect(pending).toMatchObject({ state: 'pending', attemptsMade: 0 });
    expect(pending!.startedAt).toBeUndefined();
    expect(pending!.processedBy).toBeUndefined();
    const worker = await q.registerWorker();
    const [first] = await q.lease({ workerId: worker, leaseMs: 60_000 });
    expect(first!.addedAt).toBe(pending!.addedAt);
    const leased = await q.getJob(id);
    expect(leased).toMatchObject({ state: 'leased', processedBy: worker });
    expect(leased!.startedAt).toBe(first!.startedAt);
    // A failed attempt keeps the worker that ran it (meta k) and its start.
    expect(await q.fail(first!, new Error('once'))).toBe('retried');
    const retried = await q.getJob(id);
    expect(retried).toMatchObject({ state: 'pending', attemptsMade: 1, processedBy: worker });
    expect(retried!.startedAt).toBe(first!.startedAt);
    const [second] = await q.lease({ workerId: worker, leaseMs: 60_000 });
    expect(await q.complete(second!, 'ok')).toBe(true);
    const done = await q.getJob(id);
    const t1 = await redisNow(redis);
    expect(done).toMatchObject({ state: 'completed', attemptsMade: 2, processedBy: worker });
    expect(done!.finishedAt).toBe(done!.at);
    inOrder(t0, t1, done!.addedAt, first!.startedAt, second!.startedAt, done!.finishedAt);
    expect(done!.startedAt).toBe(second!.startedAt);
  });

  it('addBulk, a delayed add and a caller-id add all get addedAt; getJobs lists the times', async () => {
    const redis = fx.client();
    const q = fx.queue<number>();
    const t0 = await redisNow(redis);
    await q.addBulk([{ data: 1 }, { data: 2, opts: { id: 'c-2', delayMs: 60_000 } }]);
    await q.add(3, { id: 'c-3', priority: 1 });
    const t1 = await redisNow(redis);
    const pending = await q.getJobs('pending');
    const delayed = await q.getJobs('delayed');
    expect(pending.map((j) => j.data)).toEqual([3, 1]);
    for (const j of [...pending, ...delayed]) inOrder(t0, t1, j.addedAt);
    const [l] = await q.lease({ leaseMs: 60_000 });
    const [listed] = await q.getJobs('leased');
    expect(listed).toMatchObject({ id: 'c-3', startedAt: l!.startedAt, processedBy: '0' });
  });

  it('a dead-lettered job has finishedAt (its death), processedBy and its start in getJob and listDead', async () => {
    const redis = fx.client();
    const q = fx.queue<number>();
    const t0 = await redisNow(redis);
    const { id } = await q.add(7);
    const worker = await q.registerWorker();
    const [l] = await q.lease({ workerId: worker });
    expect(await q.fail(l!, new NonRetryableError('bad'))).toBe('dead');
    const t1 = await redisNow(redis);
    const dead = await q.getJob(id);
    expect(dead).toMatchObject({ state: 'dead', processedBy: worker, startedAt: l!.startedAt });
    inOrder(t0, t1, dead!.addedAt, dead!.startedAt, dead!.finishedAt);
    const [listed] = await q.listDead();
    expect(listed).toMatchObject({
      id,
      diedAt: dead!.finishedAt,
      finishedAt: dead!.finishedAt,
      addedAt: dead!.addedAt,
      startedAt: l!.startedAt,
      processedBy: worker,
    });
  });

  it('a lapsed lease leaves its worker as processedBy', async () => {
    const q = fx.queue<number>({ heartbeatTimeoutMs: 100 });
    const { id } = await q.add(1);
    const worker = await q.registerWorker();
    await q.lease({ workerId: worker, leaseMs: 30 });
    await waitFor(async () => (await q.clean()).reclaimed === 1, { what: 'the lease to lapse' });
    expect(await q.getJob(id)).toMatchObject({ state: 'pending', processedBy: worker });
  });

  it('the Job a handler gets has addedAt and startedAt (also for a job handed off to a parked worker)', async () => {
    const redis = fx.client();
    const q = fx.queue<number>();
    const t0 = await redisNow(redis);
    await q.add(1);
    const seen: Array<Pick<Job<number>, 'addedAt' | 'startedAt' | 'data'>> = [];
    const w = new Worker(q, (job) => {
      seen.push({ addedAt: job.addedAt, startedAt: job.startedAt, data: job.data });
    });
    try {
      await waitFor(() => seen.length === 1, { what: 'the first job' });
      // Now idle and parked: the next add is handed off whole through the wake list.
      await waitFor(async () => (await redis.zcard(q.keys.key('parked'))) === 1, {
        what: 'the worker to park',
      });
      await q.add(2);
      await waitFor(() => seen.length === 2, { what: 'the handed-off job' });
    } finally {
      await w.close();
    }
    const t1 = await redisNow(redis);
    for (const s of seen) inOrder(t0, t1, s.addedAt, s.startedAt);
    // A hand-off's lease starts at its add.
    expect(seen[1]!.startedAt).toBe(seen[1]!.addedAt);
  });

  it('a schedule tick is added when it is made', async () => {
    const redis = fx.client();
    const q = fx.queue<string>();
    const t0 = await redisNow(redis);
    await q.upsertSchedule('tick', { every: 60_000 }, { data: 'x' });
    const t1 = await redisNow(redis);
    const [tick] = await q.getJobs('delayed');
    inOrder(t0, t1, tick!.addedAt);
  });
});
