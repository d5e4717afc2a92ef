/**
 * Job logs (issue 25, item 3): `job.log` lines kept with the job, capped per job (the newest
 * kept, the dropped counted), carried by the completion, the fail or the next renewal — no round
 * trip of their own; `getJobLogs` pages them; they go with the job.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { DelayedError, Worker, type Job } from '../../../lib/index.js';
import { countCommands } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { deferred } from '../../support/worker.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('job logs', () => {
  it('lines logged by a handler are kept with the completed job, sent with its completion', async () => {
    const client = fx.client();
    const q = fx.queue<number>({}, client);
    const { id } = await q.add(1);
    const sent = countCommands(client);
    const w = new Worker(q, async (job) => {
      const before = sent.count;
      for (let i = 0; i < 50; i++) expect(await job.log(`step ${i}`)).toBe(true);
      // No command went out for the 50 lines.
      expect(sent.count).toBe(before);
      return 'done';
    });
    try {
      await waitFor(async () => (await q.getJob(id))?.state === 'completed', {
        what: 'completion',
      });
    } finally {
      await w.close();
    }
    const logs = await q.getJobLogs(id);
    expect(logs.count).toBe(50);
    expect(logs.dropped).toBe(0);
    expect(logs.lines[0]).toBe('step 0');
    expect(logs.lines[49]).toBe('step 49');
    expect(await q.getJobLogs(id, { offset: 10, limit: 3 })).toEqual({
      lines: ['step 10', 'step 11', 'step 12'],
      count: 50,
      dropped: 0,
    });
  });

  it('the cap keeps the newest lines and says how many were dropped; long lines are cut; non-strings become strings', async () => {
    const q = fx.queue<number>({ maxLogLines: 5 });
    const { id } = await q.add(1);
    const w = new Worker(q, async (job) => {
      await job.log({ a: 1 });
      await job.log(new Error('boom'));
      await job.log(42);
      for (let i = 0; i < 10; i++) await job.log(`line ${i}`);
      await job.log('x'.repeat(5000));
    });
    try {
      await waitFor(async () => (await q.getJob(id))?.state === 'completed', {
        what: 'completion',
      });
    } finally {
      await w.close();
    }
    const logs = await q.getJobLogs(id);
    expect(logs.count).toBe(5);
    expect(logs.dropped).toBe(9);
    expect(logs.lines.slice(0, 4)).toEqual(['line 6', 'line 7', 'line 8', 'line 9']);
    expect(Buffer.byteLength(logs.lines[4]!)).toBeLessThanOrEqual(2048);
    expect(logs.lines[4]!.endsWith('…')).toBe(true);
  });

  it('coerces what is not a string (an Error: its message; else JSON)', async () => {
    const q = fx.queue<number>();
    const { id } = await q.add(1);
    const w = new Worker(q, async (job) => {
      await job.log({ a: 1 });
      await job.log(new Error('boom'));
      await job.log(undefined);
    });
    try {
      await waitFor(async () => (await q.getJob(id))?.state === 'completed', {
        what: 'completion',
      });
    } finally {
      await w.close();
    }
    expect((await q.getJobLogs(id)).lines).toEqual(['{"a":1}', 'boom', 'undefined']);
  });

  it('lines of a long job travel with its lease renewals; a failed attempt keeps its lines', async () => {
    const q = fx.queue<number>({
      leaseMs: 300,
      maxAttempts: 2,
      backoff: { type: 'fixed', delayMs: 0 },
    });
    const { id } = await q.add(1);
    const release = deferred();
    const w = new Worker(q, async (job: Job<number>) => {
      await job.log(`attempt ${job.attempt}`);
      if (job.attempt === 1) {
        await release.promise;
        throw new Error('first attempt fails');
      }
    });
    try {
      // Renewed every 100 ms: the line arrives while the handler still runs.
      await waitFor(async () => (await q.getJobLogs(id)).count === 1, { what: 'the renewal' });
      expect((await q.getJob(id))?.state).toBe('leased');
      release.resolve();
      await waitFor(async () => (await q.getJob(id))?.state === 'completed', {
        what: 'completion',
      });
    } finally {
      await w.close();
    }
    expect((await q.getJobLogs(id)).lines).toEqual(['attempt 1', 'attempt 2']);
  });

  it('a log call after the lease is lost returns false', async () => {
    const q = fx.queue<number>();
    await q.add(1);
    const cancelled = deferred<Job<number>>();
    const done = deferred<boolean>();
    const w = new Worker(q, async (job) => {
      cancelled.resolve(job);
      await new Promise((r) => job.signal.addEventListener('abort', r));
      done.resolve(await job.log('too late'));
    });
    const redis = fx.client();
    try {
      const job = await cancelled.promise;
      // Once the worker listens for notices (its subscription is not awaited by start()).
      await waitFor(
        async () =>
          ((await redis.pubsub('NUMSUB', q.keys.noticeChannel)) as [string, number])[1] > 0,
        { what: 'the worker to subscribe' },
      );
      expect(await q.cancel(job.id)).toBe(true);
      expect(await done.promise).toBe(false);
    } finally {
      await w.close();
      await q.close();
    }
  });

  it('logs go with the job: cancelled, trimmed, or completed when not kept', async () => {
    const redis = fx.client();
    const q = fx.queue<number>({ keepCompleted: { count: 1, ageMs: 60_000 }, leaseMs: 300 });
    const w = new Worker(q, async (job) => {
      await job.log(`job ${job.data}`);
      if (job.data === 3) throw new DelayedError(60_000);
    });
    try {
      const a = await q.add(1);
      await waitFor(async () => (await q.getJobLogs(a.id)).count === 1, { what: 'job 1' });
      const b = await q.add(2);
      await waitFor(async () => (await q.getJob(b.id))?.state === 'completed', { what: 'job 2' });
      // Job 1 was trimmed (count 1), its log with it.
      await expect(q.getJobLogs(a.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      const c = await q.add(3);
      await waitFor(async () => (await q.getJob(c.id))?.state === 'delayed', { what: 'job 3' });
      expect((await q.getJobLogs(c.id)).lines).toEqual(['job 3']);
      expect(await q.cancel(c.id)).toBe(true);
      expect(await redis.exists(`${q.keys.key('jobLogs')}:${c.id}`)).toBe(0);
    } finally {
      await w.close();
    }
    const off = fx.queue<number>({ keepCompleted: false });
    const w2 = new Worker(off, async (job) => {
      await job.log('x');
    });
    try {
      const d = await off.add(1);
      await waitFor(async () => (await off.counts()).pending + (await off.counts()).leased === 0, {
        what: 'job d',
      });
      await expect(off.getJobLogs(d.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect(await redis.exists(`${off.keys.key('jobLogs')}:${d.id}`)).toBe(0);
    } finally {
      await w2.close();
    }
  });
});
