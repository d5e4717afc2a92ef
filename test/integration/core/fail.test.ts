import { afterAll, describe, expect, it } from '@jest/globals';
import { NonRetryableError, type LeasedJob, type WorkQueue } from '../../../lib/index.js';
import { redisNow } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/** Fail `job` and check it is delayed until ≈ Redis time + `delay` (measured around the call). */
async function failAndExpectDelay<T>(
  q: WorkQueue<T>,
  job: LeasedJob<T>,
  delay: number,
  message: string,
) {
  const c = fx.client();
  const t0 = await redisNow(c);
  expect(await q.fail(job, new Error(message))).toBe('retried');
  const t1 = await redisNow(c);
  const info = await q.getJob(job.id);
  expect(info!.state).toBe('delayed');
  expect(info!.lastError).toBe(message);
  expect(info!.at).toBeGreaterThanOrEqual(t0 + delay);
  expect(info!.at).toBeLessThanOrEqual(t1 + delay);
  return info!.at!;
}

/** Wait (by leasing, which promotes due jobs) until `q` hands out a job. */
async function leaseWhenDue<T>(q: WorkQueue<T>): Promise<LeasedJob<T>> {
  return waitFor(async () => (await q.lease({ leaseMs: 10_000 }))[0], { what: 'a due job' });
}

describe('fail', () => {
  it('fixed backoff: the job waits in delayed until now + delay', async () => {
    const q = fx.queue<string>({ backoff: { type: 'fixed', delayMs: 7_000 }, maxAttempts: 3 });
    await q.add('a');
    const [job] = await q.lease({ leaseMs: 10_000 });
    await failAndExpectDelay(q, job!, 7_000, 'first');
    expect(await q.getJob(job!.id)).toMatchObject({ attemptsMade: 1 });
    expect(await q.counts()).toMatchObject({ delayed: 1, leased: 0, pending: 0 });
    expect(await q.lease({ leaseMs: 10_000 })).toEqual([]);
  });

  it('exponential backoff doubles per attempt, then dead-letters with the last error', async () => {
    const q = fx.queue<string>({
      backoff: { type: 'exponential', delayMs: 80 },
      maxAttempts: 3,
    });
    await q.add('a');
    const [j1] = await q.lease({ leaseMs: 10_000 });
    expect(j1!.attempt).toBe(1);
    await failAndExpectDelay(q, j1!, 80, 'boom 1');
    const j2 = await leaseWhenDue(q);
    expect(j2.attempt).toBe(2);
    await failAndExpectDelay(q, j2, 160, 'boom 2');
    const j3 = await leaseWhenDue(q);
    expect(j3.attempt).toBe(3);
    expect(await q.fail(j3, new Error('boom 3'))).toBe('dead');
    const info = await q.getJob(j3.id);
    expect(info).toMatchObject({
      state: 'dead',
      attemptsMade: 3,
      lastError: 'boom 3',
      deadReason: 'boom 3',
    });
    const dead = await q.listDead();
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({
      id: j3.id,
      data: 'a',
      reason: 'boom 3',
      lastError: 'boom 3',
      attemptsMade: 3,
    });
    expect(await q.counts()).toMatchObject({ dead: 1, delayed: 0, pending: 0, leased: 0 });
    expect(await q.lease({ leaseMs: 10_000 })).toEqual([]);
  });

  it('per-job backoff and maxAttempts override the queue', async () => {
    const q = fx.queue<string>({ backoff: { type: 'fixed', delayMs: 60_000 }, maxAttempts: 10 });
    await q.add('a', { backoff: { type: 'fixed', delayMs: 50 }, maxAttempts: 2 });
    const [j1] = await q.lease({ leaseMs: 10_000 });
    expect(j1!.maxAttempts).toBe(2);
    await failAndExpectDelay(q, j1!, 50, 'one');
    const j2 = await leaseWhenDue(q);
    expect(j2.attempt).toBe(2);
    expect(await q.fail(j2, new Error('two'))).toBe('dead');
    expect(await q.getJob(j2.id)).toMatchObject({
      state: 'dead',
      attemptsMade: 2,
      deadReason: 'two',
    });
  });

  it('a retry with delay 0 goes to the BACK of its priority, behind waiting jobs', async () => {
    const q = fx.queue<string>({ backoff: { type: 'fixed', delayMs: 0 }, maxAttempts: 5 });
    await q.addBulk([
      { data: 'a' },
      { data: 'b' },
      { data: 'c' },
      { data: 'low', opts: { priority: 8 } },
    ]);
    const [a] = await q.lease({ leaseMs: 10_000 });
    expect(a!.data).toBe('a');
    expect(await q.fail(a!, new Error('again'))).toBe('retried');
    expect(await q.getJob(a!.id)).toMatchObject({
      state: 'pending',
      attemptsMade: 1,
      lastError: 'again',
    });
    const rest = await q.lease({ count: 10, leaseMs: 10_000 });
    expect(rest.map((j) => [j.data, j.attempt])).toEqual([
      ['b', 1],
      ['c', 1],
      ['a', 2],
      ['low', 1],
    ]);
  });

  it('after a backoff delay the job also goes to the back of its priority', async () => {
    const q = fx.queue<string>({ backoff: { type: 'fixed', delayMs: 60 }, maxAttempts: 5 });
    await q.add('a');
    const [a] = await q.lease({ leaseMs: 10_000 });
    const due = await failAndExpectDelay(q, a!, 60, 'later');
    await q.addBulk([{ data: 'b' }, { data: 'c' }]);
    const c = fx.client();
    await waitFor(async () => (await redisNow(c)) > due, { what: 'the retry to be due' });
    const all = await q.lease({ count: 10, leaseMs: 10_000 });
    expect(all.map((j) => j.data)).toEqual(['b', 'c', 'a']);
  });

  it('a NonRetryableError dead-letters at once, whatever attempts remain', async () => {
    const q = fx.queue<string>({ maxAttempts: 10 });
    await q.add('a', { id: 'job-a', name: 'send' });
    const [job] = await q.lease({ leaseMs: 10_000 });
    expect(await q.fail(job!, new NonRetryableError('bad input'))).toBe('dead');
    expect(await q.getJob('job-a')).toMatchObject({
      state: 'dead',
      attemptsMade: 1,
      lastError: 'bad input',
      deadReason: 'bad input',
    });
    const [dead] = await q.listDead();
    expect(dead).toMatchObject({ id: 'job-a', name: 'send', reason: 'bad input', attemptsMade: 1 });
    // Any error with retryable === false does the same.
    await q.add('b');
    const [other] = await q.lease({ leaseMs: 10_000 });
    const err = Object.assign(new Error('plain but final'), { retryable: false });
    expect(await q.fail(other!, err)).toBe('dead');
    expect(await q.counts()).toMatchObject({ dead: 2, delayed: 0, pending: 0 });
  });

  it('a dead job can be retried from the dead-letter set with attempts reset', async () => {
    const q = fx.queue<string>({ maxAttempts: 1 });
    await q.add('a');
    const [job] = await q.lease({ leaseMs: 10_000 });
    expect(await q.fail(job!, new Error('x'))).toBe('dead');
    expect(await q.retryDead(job!.id)).toBe(true);
    expect(await q.retryDead(job!.id)).toBe(false);
    const [again] = await q.lease({ leaseMs: 10_000 });
    expect(again).toMatchObject({ id: job!.id, attempt: 1, data: 'a' });
  });
});
