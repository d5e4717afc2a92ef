/**
 * Step jobs (issue 25, item 5): `job.updateData` (fenced by the lease) and `DelayedError` from a
 * handler (back to delayed, no attempt counted, data as updated); `queue.updateData` and
 * `queue.changeDelay` for waiting jobs; the worker's `backoffStrategy` and backoff `jitter`.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { DelayedError, Worker, type Job } from '../../../lib/index.js';
import { backoffDelay } from '../../../lib/options.js';
import { redisNow } from '../../support/history.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

interface Step {
  step: number;
  log: string[];
}

describe('step jobs', () => {
  it('updateData + DelayedError: each step runs after its delay with the data the last one left, no attempt counted', async () => {
    const q = fx.queue<Step, string>({ maxAttempts: 1 });
    const { id } = await q.add({ step: 0, log: [] });
    const attempts: number[] = [];
    const w = new Worker(q, async (job: Job<Step>) => {
      attempts.push(job.attempt);
      const next = { step: job.data.step + 1, log: [...job.data.log, `step ${job.data.step}`] };
      if (next.step < 4) {
        expect(await job.updateData(next)).toBe(true);
        expect(job.data).toEqual(next);
        // 20 ms, 0 ms (again at once: a delay, not a failure), a time already past.
        throw new DelayedError([20, 0, new Date(Date.now() - 1_000)][next.step - 1]!);
      }
      return next.log.join(', ');
    });
    try {
      await waitFor(async () => (await q.getJob(id))?.state === 'completed', {
        what: 'four steps',
      });
    } finally {
      await w.close();
    }
    const done = await q.getJob(id);
    expect(done).toMatchObject({
      result: 'step 0, step 1, step 2, step 3',
      data: { step: 3, log: ['step 0', 'step 1', 'step 2'] },
      attemptsMade: 1,
    });
    // maxAttempts 1: a delay is not an attempt.
    expect(attempts).toEqual([1, 1, 1, 1]);
  });

  it('a delayed step waits in the delayed set until its time', async () => {
    const redis = fx.client();
    const q = fx.queue<number>();
    const { id } = await q.add(1);
    const t0 = await redisNow(redis);
    const w = new Worker(q, () => {
      throw new DelayedError(60_000);
    });
    try {
      await waitFor(async () => (await q.getJob(id))?.state === 'delayed', { what: 'the delay' });
    } finally {
      await w.close();
    }
    const job = await q.getJob(id);
    expect(job!.at).toBeGreaterThanOrEqual(t0 + 60_000);
    expect(job!.attemptsMade).toBe(0);
  });

  it('a DelayedError-like error (another realm) with a time past what a job can be due at: a plain failure', async () => {
    const q = fx.queue<number>({ maxAttempts: 1 });
    const { id } = await q.add(1);
    const outcomes: string[] = [];
    const w = new Worker(q, () => {
      throw Object.assign(new Error('far'), { name: 'DelayedError', runAt: 2e14 });
    });
    w.on('failed', (_job, _e, outcome) => outcomes.push(outcome));
    w.on('error', () => undefined);
    try {
      // (Its delay was refused by the client, and sent again every 2 s until close().)
      await waitFor(async () => (await q.getJob(id))?.state === 'dead', { what: 'dead-lettered' });
    } finally {
      await w.close();
    }
    expect(outcomes).toEqual(['dead']);
    expect(await q.getJob(id)).toMatchObject({ attemptsMade: 1 });
  });

  it('job.updateData is fenced by the lease; data over the payload limit is refused, nothing changed', async () => {
    const q = fx.queue<string>({ maxPayloadBytes: 100 });
    const { id } = await q.add('a');
    const [lease] = await q.lease({ leaseMs: 60_000 });
    expect(await q.updateLeasedData(lease!, 'b')).toBe(true);
    await expect(q.updateLeasedData(lease!, 'x'.repeat(200))).rejects.toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      // (Refused input lists its problem, as every refusal does.)
      problems: ['payload is 202 bytes, over maxPayloadBytes 100'],
    });
    // A result over the limit too, from complete() by hand (nothing sent).
    await expect(q.complete(lease!, 'y'.repeat(200))).rejects.toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
      problems: ['result is 202 bytes, over maxPayloadBytes 100'],
    });
    expect((await q.getJob(id))!.data).toBe('b');
    await q.release(lease!);
    expect(await q.updateLeasedData(lease!, 'c')).toBe(false);
    expect((await q.getJob(id))!.data).toBe('b');
  });

  it('queue.updateData of a waiting or dead job; false when unknown; BAD_STATE when leased or completed', async () => {
    const q = fx.queue<string>({ maxPayloadBytes: 100, maxAttempts: 1 });
    const { id: pending } = await q.add('p');
    const { id: delayed } = await q.add('d', { delayMs: 60_000 });
    expect(await q.updateData(pending, 'p2')).toBe(true);
    expect(await q.updateData(delayed, 'd2')).toBe(true);
    expect(await q.getJob(pending)).toMatchObject({ state: 'pending', data: 'p2' });
    expect(await q.getJob(delayed)).toMatchObject({ state: 'delayed', data: 'd2' });
    expect((await q.getJobs('pending')).map((j) => j.id)).toEqual([pending]);
    await expect(q.updateData(pending, 'x'.repeat(200))).rejects.toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
    });
    expect((await q.getJob(pending))!.data).toBe('p2');
    expect(await q.updateData('nope', 'x')).toBe(false);
    const [l] = await q.lease();
    await expect(q.updateData(pending, 'x')).rejects.toMatchObject({ code: 'BAD_STATE' });
    await q.fail(l!, new Error('x'));
    expect(await q.updateData(pending, 'fixed')).toBe(true);
    expect(await q.getJob(pending)).toMatchObject({ state: 'dead', data: 'fixed' });
    const { id: other } = await q.add('o');
    await q.complete((await q.lease())[0]!);
    await expect(q.updateData(other, 'x')).rejects.toMatchObject({ code: 'BAD_STATE' });
  });

  it('queue.changeDelay: a pending job to delayed, a delayed one to another time or to now', async () => {
    const redis = fx.client();
    const q = fx.queue<string>();
    const { id: a } = await q.add('a');
    const { id: b } = await q.add('b', { delayMs: 60_000 });
    const t0 = await redisNow(redis);
    expect(await q.changeDelay(a, 30_000)).toBe(true);
    const da = await q.getJob(a);
    expect(da!.state).toBe('delayed');
    expect(da!.at).toBeGreaterThanOrEqual(t0 + 30_000);
    expect(await q.changeDelay(b, new Date(Date.now() + 3_600_000))).toBe(true);
    expect((await q.getJob(b))!.at).toBeGreaterThan(t0 + 3_000_000);
    // A time in the past: runs now.
    expect(await q.changeDelay(b, new Date(0))).toBe(true);
    const [l] = await q.lease();
    expect(l!.id).toBe(b);
    await expect(q.changeDelay(b, 10)).rejects.toMatchObject({ code: 'BAD_STATE' });
    expect(await q.changeDelay(a, 0)).toBe(true);
    expect((await q.lease())[0]!.id).toBe(a);
    expect(await q.changeDelay('nope', 10)).toBe(false);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('queue.changeDelay of a pending grouped job: out of its group until due, then back', async () => {
    // (It looked for the job in the ungrouped list only: false, and the job ran at once.)
    const redis = fx.client();
    const q = fx.queue<string>();
    const { id } = await q.add('g', { group: 'T' });
    const t0 = await redisNow(redis);
    expect(await q.changeDelay(id, 60_000)).toBe(true);
    expect(await q.getJob(id)).toMatchObject({ state: 'delayed', group: 'T' });
    expect((await q.getJob(id))!.at).toBeGreaterThanOrEqual(t0 + 60_000);
    expect((await q.counts()).pending).toBe(0);
    expect(await q.lease()).toEqual([]);
    expect(await q.changeDelay(id, 0)).toBe(true);
    expect(await q.promote(id)).toBe(true);
    const [l] = await q.lease();
    expect(l).toMatchObject({ id, group: 'T' });
    expect((await q.repair()).fixes).toEqual([]);
  });
});

describe('backoff', () => {
  it('backoffStrategy(attempt, error, job) sets the retry delay; undefined keeps the job backoff', async () => {
    const redis = fx.client();
    const q = fx.queue<string>({ backoff: { type: 'fixed', delayMs: 0 }, maxAttempts: 5 });
    const { id: slow } = await q.add('slow');
    const { id: fast } = await q.add('fast');
    const calls: Array<[number, string, string]> = [];
    const w = new Worker(
      q,
      () => {
        throw new Error('nope');
      },
      {
        backoffStrategy: (attempt, error, job) => {
          calls.push([attempt, (error as Error).message, job.data as string]);
          return job.data === 'slow' ? 60_000 : undefined;
        },
      },
    );
    const t0 = await redisNow(redis);
    try {
      await waitFor(async () => (await q.getJob(slow))?.state === 'delayed', { what: 'slow' });
      await waitFor(async () => (await q.getJob(fast))?.state === 'dead', { what: 'fast' });
    } finally {
      await w.close();
    }
    expect((await q.getJob(slow))!.at).toBeGreaterThanOrEqual(t0 + 60_000 - 1_000);
    expect(calls.filter((c) => c[2] === 'fast').map((c) => c[0])).toEqual([1, 2, 3, 4]);
    expect(calls[0]![1]).toBe('nope');
  });

  it('jitter draws each delay between delay·(1 - jitter) and delay', () => {
    const b = { type: 'exponential' as const, delayMs: 1_000, jitter: 0.5 };
    expect(backoffDelay(b, 3, () => 0)).toBe(4_000);
    expect(backoffDelay(b, 3, () => 1)).toBe(2_000);
    expect(backoffDelay({ ...b, type: 'fixed' }, 3, () => 0.5)).toBe(750);
    for (let i = 0; i < 100; i++) {
      const d = backoffDelay(b, 2);
      expect(d).toBeGreaterThanOrEqual(1_000);
      expect(d).toBeLessThanOrEqual(2_000);
    }
  });
});
