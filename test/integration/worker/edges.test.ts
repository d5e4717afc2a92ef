/**
 * The edges of a job's life in a Worker (issue 12): every outcome of a job handed off to an idle
 * worker, before its adoption, ends exactly as for a leased job; no handler starts for a job
 * whose cancel resolved first; a worker whose connection dropped gives back at once what it
 * held without knowing.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { NonRetryableError, type Handler, type WorkQueue } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { startRedis } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';
import {
  deferred,
  recordEvents,
  waitParked,
  workersClosedAfterEach,
} from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

/** Wait until the worker is parked (an add now hands its job off instead of queueing it). */
const parked = (q: WorkQueue, workerId: string) => waitParked(fx.client(), q, workerId);

type Way = 'handed off' | 'leased';
const WAYS: Way[] = ['handed off', 'leased'];

/**
 * Run one job through a worker with `handler`, delivered either by hand-off (the worker idles
 * first) or by a regular lease (the job waits before the worker starts). Resolves the job's
 * final record and the worker's events, once `done` says the outcome is in.
 */
async function runOne(
  way: Way,
  handler: Handler<string, string>,
  options: { jobTimeoutMs?: number; maxAttempts?: number } = {},
  done: (q: WorkQueue<string, string>, id: string) => Promise<boolean>,
) {
  const q = fx.queue<string, string>({
    maxAttempts: options.maxAttempts ?? 1,
    backoff: { type: 'fixed', delayMs: 60_000 },
  });
  let id = '';
  if (way === 'leased') id = (await q.add('x', { id: 'job-1' })).id;
  const w = worker(q, handler, { jobTimeoutMs: options.jobTimeoutMs });
  const events = recordEvents(w);
  await w.start();
  if (way === 'handed off') {
    await parked(q, w.workerId);
    id = (await q.add('x', { id: 'job-1' })).id;
  }
  await waitFor(() => done(q, id), { what: `${way}: the outcome`, timeoutMs: 10_000 });
  const job = await q.getJob(id);
  return { q, w, job, events: events.map(([name]) => name) };
}

const dead = async (q: WorkQueue<string, string>, id: string) =>
  (await q.getJob(id))?.state === 'dead';
const delayed = async (q: WorkQueue<string, string>, id: string) =>
  (await q.getJob(id))?.state === 'delayed';

describe('a handed-off job ends exactly like a leased one', () => {
  it.each(WAYS)(
    '%s: a handler that throws synchronously fails the job (an attempt)',
    async (way) => {
      const r = await runOne(
        way,
        () => {
          throw new Error('sync boom');
        },
        { maxAttempts: 2 },
        delayed,
      );
      expect(r.job).toMatchObject({ state: 'delayed', attemptsMade: 1, lastError: 'sync boom' });
      expect(r.events).toEqual(['failed', 'retried']);
    },
  );

  it.each(WAYS)('%s: a handler that rejects in its first microtask fails the job', async (way) => {
    const r = await runOne(way, async () => Promise.reject(new Error('async boom')), {}, dead);
    expect(r.job).toMatchObject({ state: 'dead', attemptsMade: 1, deadReason: 'async boom' });
    expect(r.events).toEqual(['failed', 'dead']);
  });

  it.each(WAYS)('%s: NonRetryableError dead-letters at once, one run', async (way) => {
    let runs = 0;
    const r = await runOne(
      way,
      () => {
        runs++;
        throw new NonRetryableError('bad input');
      },
      { maxAttempts: 5 },
      dead,
    );
    expect(r.job).toMatchObject({ state: 'dead', attemptsMade: 1, deadReason: 'bad input' });
    expect(runs).toBe(1);
  });

  it.each(WAYS)('%s: jobTimeoutMs fails the job and aborts its signal', async (way) => {
    let aborted = false;
    const r = await runOne(
      way,
      (job) =>
        new Promise<string>((resolve) => {
          job.signal.addEventListener('abort', () => {
            aborted = true;
            resolve('late');
          });
        }),
      { jobTimeoutMs: 50 },
      dead,
    );
    expect(r.job).toMatchObject({ state: 'dead', attemptsMade: 1 });
    expect(r.job!.deadReason).toMatch(/timed out after 50 ms/);
    expect(aborted).toBe(true);
  });

  it.each(WAYS)('%s: cancel aborts the run; nothing is left', async (way) => {
    const started = deferred<AbortSignal>();
    const r = await runOne(
      way,
      (job) => {
        started.resolve(job.signal);
        return new Promise<string>(() => undefined);
      },
      {},
      async (q, id) => {
        if (!started.settled) return false;
        expect(await q.cancel(id)).toBe(true);
        return true;
      },
    );
    const signal = await started.promise;
    await waitFor(() => signal.aborted, { what: 'the signal to abort' });
    expect(r.job).toBeNull();
    await waitFor(async () => (await r.q.counts()).leased === 0, { what: 'no lease left' });
    expect(await r.q.counts()).toMatchObject({ pending: 0, delayed: 0, dead: 0 });
  });

  it.each(WAYS)(
    '%s: close() gives a running job back to the front, no attempt counted',
    async (way) => {
      const started = deferred();
      const r = await runOne(
        way,
        () => {
          started.resolve();
          return new Promise<string>(() => undefined);
        },
        {},
        async () => started.settled,
      );
      await r.w.close({ timeoutMs: 0 });
      expect(await r.q.getJob('job-1')).toMatchObject({ state: 'pending', attemptsMade: 0 });
    },
  );
});

describe('cancel never lets a handler start after it resolved', () => {
  it('running + prefetched jobs cancelled together: the prefetched one never starts after its cancel resolved (20 rounds)', async () => {
    for (let round = 0; round < 20; round++) {
      const q = fx.queue<string>();
      const started: string[] = [];
      const resolved = new Set<string>();
      const startedAfterCancel: string[] = [];
      const w = worker(
        q,
        async (job) => {
          started.push(job.data);
          if (resolved.has(job.data)) startedAfterCancel.push(job.data);
          if (job.data === 'A') {
            await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
          }
        },
        { concurrency: 1, prefetch: 1 },
      );
      await q.addBulk([{ data: 'A' }, { data: 'B' }]);
      await w.start();
      await waitFor(async () => started.includes('A') && (await q.counts()).leased === 2, {
        what: 'A running and B prefetched',
      });
      await Promise.all(
        [
          ['1', 'A'],
          ['2', 'B'],
        ].map(async ([id, data]) => {
          expect(await q.cancel(id!)).toBe(true);
          resolved.add(data!);
        }),
      );
      // The worker goes on: a later job runs; nothing cancelled started after its cancel.
      await q.add('C');
      await waitFor(() => started.includes('C'), { what: 'C to run' });
      expect(startedAfterCancel).toEqual([]);
      expect(started.filter((d) => d !== 'B')).toEqual(['A', 'C']);
      await w.close({ timeoutMs: 1_000 });
    }
  }, 60_000);

  it('a hand-off cancelled right after the add never starts once cancel resolved', async () => {
    const q = fx.queue<string>();
    const started: string[] = [];
    let cancelledAt = 0;
    const startedAfter: string[] = [];
    const w = worker(q, async (job) => {
      started.push(job.data);
      if (cancelledAt > 0) startedAfter.push(job.data);
    });
    await w.start();
    for (let i = 0; i < 20; i++) {
      await parked(q, w.workerId);
      const { id } = await q.add(`h${i}`);
      await q.cancel(id);
      cancelledAt = Date.now();
      const marker = await q.add(`m${i}`);
      await waitFor(() => started.includes(`m${i}`), { what: `marker ${marker.id} to run` });
      expect(startedAfter.filter((d) => d.startsWith('h'))).toEqual([]);
      cancelledAt = 0;
      startedAfter.length = 0;
    }
  }, 60_000);
});

describe('reconcile after a dropped connection', () => {
  it('a lease whose reply never reached the worker comes back at once, not after leaseMs', async () => {
    // A private Redis: CLIENT KILL would cut the other test files' connections.
    const redis = await startRedis();
    const client = new Redis(redis.url);
    const admin = new Redis(redis.url);
    try {
      const q = fx.queue<string>({ leaseMs: 120_000 }, client);
      const ran: string[] = [];
      const w = worker(q, (job) => {
        ran.push(job.data);
      });
      await w.start();
      // A lease for this worker that it never hears of, as when a lease call ran but its reply
      // died with the connection (paused meanwhile, so that the add is not handed off to it).
      w.pause();
      await waitFor(async () => (await admin.zcard(q.keys.key('parked'))) === 0, {
        what: 'the worker unparked',
      });
      await q.add('lost-reply');
      const [orphan] = await q.lease({ workerId: w.workerId, leaseMs: 120_000 });
      expect(orphan?.data).toBe('lost-reply');
      w.resume();
      await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await waitFor(() => ran.includes('lost-reply'), {
        what: 'the orphaned job to run',
        timeoutMs: 10_000,
      });
      await waitFor(async () => (await q.getJob(orphan!.id))?.state === 'completed', {
        what: 'completed',
      });
      expect(ran).toEqual(['lost-reply']);
      await w.close({ timeoutMs: 1_000 });
    } finally {
      client.disconnect();
      admin.disconnect();
      await redis.stop();
    }
  }, 30_000);
});
