/**
 * Workers you can see (issue 25, item 6: getWorkers from the registry the heartbeats keep) and
 * events that carry what BullMQ's do (item 8): the completed event's result (bounded), the
 * failed/dead error, the job's times; the worker's events get the job with its times.
 */
import { hostname } from 'node:os';
import { afterAll, describe, expect, it } from '@jest/globals';
import {
  NonRetryableError,
  QueueEvents,
  Worker,
  type Job,
  type QueueEvent,
} from '../../../lib/index.js';
import { inOrder, redisNow } from '../../support/history.js';
import { QueueFixture } from '../../support/queue.js';
import { deferred } from '../../support/worker.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('getWorkers', () => {
  it('lists each registered worker: host, pid, name, concurrency, what it holds, when it started and last beat', async () => {
    const redis = fx.client();
    const q = fx.queue<number>();
    const t0 = await redisNow(redis);
    const hold = deferred();
    const w = new Worker(q, () => hold.promise, { concurrency: 3, name: 'mailer', prefetch: 0 });
    // Either may take the job (whichever waits first): both hold it until the end.
    const other = new Worker(q, () => hold.promise);
    try {
      await Promise.all([w.start(), other.start()]);
      await q.add(1);
      await waitFor(() => w.activeCount + other.activeCount === 1, { what: 'a job to run' });
      const busy = w.activeCount === 1 ? w : other;
      // A handed-off job runs before its worker's next call adopts it into its lease set.
      await waitFor(
        async () => (await q.getWorkers()).find((x) => x.id === busy.workerId)?.running === 1,
        { what: 'the running job adopted' },
      );
      const list = await q.getWorkers();
      expect(list.map((x) => x.id).sort()).toEqual([w.workerId, other.workerId].sort());
      const mine = list.find((x) => x.id === w.workerId)!;
      expect(mine).toMatchObject({
        host: hostname(),
        pid: process.pid,
        name: 'mailer',
        concurrency: 3,
      });
      expect(list.find((x) => x.id === other.workerId)!.name).toBeUndefined();
      expect(list.find((x) => x.id === busy.workerId)!.running).toBe(1);
      for (const x of list) inOrder(t0, await redisNow(redis), x.startedAt, x.lastBeatAt);
    } finally {
      hold.resolve();
      await other.close();
      await w.close();
    }
    // Gone once they left.
    expect(await q.getWorkers()).toEqual([]);
  });

  it('a dead worker leaves the list when clean() reclaims it', async () => {
    const q = fx.queue<number>({ heartbeatTimeoutMs: 100 });
    const id = await q.registerWorker({ concurrency: 2 });
    expect((await q.getWorkers()).map((x) => x.id)).toEqual([id]);
    await waitFor(async () => (await q.clean()).deadWorkers === 1, { what: 'the worker to lapse' });
    expect(await q.getWorkers()).toEqual([]);
  });
});

describe('events', () => {
  it('QueueEvents: completed carries the result (up to 1 KiB, else its size), the worker and the times; failed and dead the error', async () => {
    const redis = fx.client();
    const q = fx.queue<string, unknown>({ maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0 } });
    const events = new QueueEvents(redis, q.name, { prefix: q.options.prefix });
    const seen: QueueEvent[] = [];
    events.on('event', (e) => seen.push(e));
    await events.ready();
    const t0 = await redisNow(redis);
    const w = new Worker(q, (job) => {
      if (job.data === 'big') return 'x'.repeat(2_000);
      if (job.data === 'none') return undefined;
      if (job.data === 'bad') throw new NonRetryableError('bad data');
      if (job.data === 'flaky' && job.attempt === 1) throw new Error('flaky once');
      return { ok: job.data };
    });
    try {
      for (const d of ['small', 'big', 'none', 'bad', 'flaky']) await q.add(d, { id: d });
      await waitFor(
        () => seen.filter((e) => e.kind === 'completed' || e.kind === 'dead').length === 5,
        {
          what: 'every outcome',
        },
      );
    } finally {
      await w.close();
      await events.close();
    }
    const t1 = await redisNow(redis);
    const of = (id: string, kind: QueueEvent['kind']) =>
      seen.find((e) => e.id === id && e.kind === kind) as unknown as Record<string, unknown>;
    expect(of('small', 'completed')).toMatchObject({
      resultStored: true,
      result: { ok: 'small' },
      workerId: w.workerId,
    });
    expect(of('big', 'completed')).toMatchObject({ resultStored: true, resultBytes: 2_002 });
    expect(of('big', 'completed').result).toBeUndefined();
    expect('result' in of('none', 'completed')).toBe(false);
    expect(of('flaky', 'failed')).toMatchObject({
      error: 'flaky once',
      retried: true,
      workerId: w.workerId,
    });
    expect(of('bad', 'dead')).toMatchObject({ reason: 'bad data' });
    for (const e of seen.filter((x) => ['completed', 'failed', 'dead'].includes(x.kind))) {
      const x = e as QueueEvent & { addedAt?: number; startedAt?: number };
      inOrder(t0, t1, x.addedAt, x.startedAt, x.at);
    }
    const active = seen.find((e) => e.kind === 'active') as QueueEvent & { addedAt?: number };
    inOrder(t0, t1, active.addedAt, active.at);
  });

  it("a job's events carry its times as its worker got them (a call of one job reads its slots alone)", async () => {
    const redis = fx.client();
    // Results not kept: the completed event's times are its section's tail ('tm').
    const q = fx.queue<string>({ keepCompleted: false });
    const events = new QueueEvents(redis, q.name, { prefix: q.options.prefix });
    const seen: QueueEvent[] = [];
    events.on('event', (e) => seen.push(e));
    await events.ready();
    await q.add('a', { id: 'one' });
    // Started in a later ms than added: a started time read from the added slot would show.
    const added = await redisNow(redis);
    await waitFor(async () => (await redisNow(redis)) > added + 1, { what: 'Redis time to pass' });
    const ran = deferred<Job<string>>();
    const w = new Worker(q, (job) => ran.resolve(job));
    try {
      const job = await ran.promise;
      await waitFor(() => seen.some((e) => e.id === 'one' && e.kind === 'completed'), {
        what: 'the completed event',
      });
      type Timed = QueueEvent & { addedAt?: number; startedAt?: number };
      const done = seen.find((e) => e.id === 'one' && e.kind === 'completed') as Timed;
      const active = seen.find((e) => e.id === 'one' && e.kind === 'active') as Timed;
      expect(job.startedAt).toBeGreaterThan(job.addedAt);
      expect(done).toMatchObject({ addedAt: job.addedAt, startedAt: job.startedAt });
      expect(active.addedAt).toBe(job.addedAt);
    } finally {
      await w.close();
      await events.close();
    }
  });

  it('the worker events carry the job with its times, finishedAt once its outcome is recorded', async () => {
    const redis = fx.client();
    const q = fx.queue<string>({ maxAttempts: 1 });
    const t0 = await redisNow(redis);
    const completed = deferred<[Job<string>, unknown]>();
    const dead = deferred<Job<string>>();
    const w = new Worker(q, (job) => {
      if (job.data === 'bad') throw new Error('bad');
      return 'r';
    });
    w.on('completed', (job, result) => completed.resolve([job, result]));
    w.on('dead', (job) => dead.resolve(job));
    try {
      await q.add('good');
      await q.add('bad');
      const [job, result] = await completed.promise;
      const failed = await dead.promise;
      const t1 = await redisNow(redis);
      expect(result).toBe('r');
      inOrder(t0, t1, job.addedAt, job.startedAt, job.finishedAt);
      inOrder(t0, t1, failed.addedAt, failed.startedAt, failed.finishedAt);
    } finally {
      await w.close();
    }
  });
});
