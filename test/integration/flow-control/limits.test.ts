/**
 * Limits enforced in Redis across workers (issue 16): rate limit, global concurrency (also
 * after a worker is SIGKILLed), RateLimitError. Times are Redis times.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { RateLimitError, type WorkQueue } from '../../../lib/index.js';
import { redisNow, sameQueue } from '../../support/core.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { readLog, startWorkerChild } from '../../support/worker-child-process.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
// Every temp file of this file's tests lives here, removed at the end.
const tmp = mkdtempSync(path.join(tmpdir(), 'wq-limits-'));
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
  return fx.cleanup();
});
const worker = workersClosedAfterEach((e) => console.error('worker error', e));
const LEASE_MS = 30_000;

/**
 * The Redis time at which a leased job was leased: its startedAt (the lease script's own time),
 * not its deadline less its lease length, which the worker's first lease extension moves.
 */
async function leasedAt(q: WorkQueue, id: string): Promise<number> {
  return (await q.getJob(id))!.startedAt!;
}

describe('limits in Redis', () => {
  it('limiter { max: 20, durationMs: 1000 }: no 1000 ms of Redis time holds more than 20 leases', async () => {
    const q = fx.queue<number>({ limiter: { max: 20, durationMs: 1_000 }, leaseMs: LEASE_MS });
    await q.addBulk(Array.from({ length: 60 }, (_, i) => ({ data: i })));
    const at: number[] = [];
    for (let i = 0; i < 3; i++) {
      const qi = sameQueue(fx, q, { leaseMs: LEASE_MS }); // no limiter option: Redis has it
      worker(
        qi,
        async (job) => {
          at.push(await leasedAt(qi as WorkQueue, job.id));
        },
        { concurrency: 10 },
      );
    }
    await waitFor(() => at.length === 60, { timeoutMs: 15_000, what: '60 jobs' });
    at.sort((a, b) => a - b);
    // Exact, no slack: lease times are the lease script's own Redis time, and the limit is a
    // sliding window: the 21st lease after any lease comes at least 1000 ms later.
    for (let i = 0; i + 20 < at.length; i++)
      expect(at[i + 20]! - at[i]!).toBeGreaterThanOrEqual(1_000);
    // Throughput: 60 jobs in 3 windows — the last batch within 2000 ms + 500 ms of slack (the
    // workers' timers and round trips) of the first.
    expect(at[59]! - at[0]!).toBeLessThan(2_500);
    // (A handler's return queues its complete: the last ones land after the last push.)
    await waitFor(async () => (await q.counts()).leased === 0, { what: 'the last completes' });
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0 });
  });

  it('limiter { max: 100, durationMs: 1000 }, 4 worker processes × concurrency 20, 1 000 jobs: never over 100 leases per 1000 ms, throughput within 10 % of the limit', async () => {
    const limiter = { max: 100, durationMs: 1_000 };
    const q = fx.queue<number>({ limiter, leaseMs: LEASE_MS });
    const execLog = path.join(mkdtempSync(path.join(tmp, 'limit-')), 'exec.log');
    const children = Array.from({ length: 4 }, () =>
      startWorkerChild({
        redisUrl: testRedisUrl(),
        queue: q.name,
        queueOptions: { prefix: q.options.prefix, leaseMs: LEASE_MS },
        workerOptions: { concurrency: 20 },
        mode: 'work',
        workMs: 0,
        execLog,
        logLeasedAt: true,
      }),
    );
    try {
      await Promise.all(children.map((c) => c.ready));
      await q.addBulk(Array.from({ length: 1_000 }, (_, i) => ({ data: i })));
      await waitFor(() => readLog(execLog).length >= 1_000, {
        timeoutMs: 30_000,
        what: '1 000 jobs',
      });
      const runs = readLog(execLog);
      expect(new Set(runs.map((r) => r.id)).size).toBe(1_000);
      expect(new Set(runs.map((r) => r.pid)).size).toBe(4);
      const at = runs.map((r) => r.at!).sort((a, b) => a - b);
      // Exact: the 101st lease after any lease comes at least 1000 ms (Redis time) later.
      for (let i = 0; i + 100 < at.length; i++)
        expect(at[i + 100]! - at[i]!).toBeGreaterThanOrEqual(1_000);
      // Throughput: 1 000 jobs are 10 windows, the last one starting 9 000 ms after the first
      // lease at best; within 10 % of the limit is 9 900 ms.
      const span = at[999]! - at[0]!;
      console.log(`limiter 100/s, 4 processes × c20: 1 000 leases over ${span} ms (best 9 000)`);
      expect(span).toBeLessThan(9_900);
    } finally {
      await Promise.all(children.map((c) => c.close()));
    }
  }, 60_000);

  it('global concurrency 3 across 3 Workers: never more than 3 in handlers at once', async () => {
    const q = fx.queue<number>();
    await q.setGlobalConcurrency(3);
    let inHandlers = 0;
    let most = 0;
    let done = 0;
    for (let i = 0; i < 3; i++) {
      worker(
        sameQueue(fx, q),
        async () => {
          most = Math.max(most, ++inHandlers);
          await new Promise((r) => setTimeout(r, 5));
          inHandlers--;
          done++;
        },
        { concurrency: 5 },
      );
    }
    await q.addBulk(Array.from({ length: 60 }, (_, i) => ({ data: i })));
    await waitFor(() => done === 60, { timeoutMs: 15_000, what: '60 jobs' });
    expect(most).toBeLessThanOrEqual(3);
    expect(most).toBeGreaterThanOrEqual(2);
  });

  it('a SIGKILLed worker’s slots come back when its jobs are reclaimed', async () => {
    const q = fx.queue<number>({ heartbeatTimeoutMs: 500 });
    await q.setGlobalConcurrency(2);
    const execLog = path.join(mkdtempSync(path.join(tmp, 'slots-')), 'exec.log');
    const child = startWorkerChild({
      redisUrl: testRedisUrl(),
      queue: q.name,
      queueOptions: { prefix: q.options.prefix, heartbeatTimeoutMs: 500 },
      workerOptions: { concurrency: 4 },
      mode: 'hang',
      execLog,
    });
    await child.ready;
    await q.addBulk(Array.from({ length: 6 }, (_, i) => ({ data: i })));
    await waitFor(() => readLog(execLog).length === 2, { what: 'child holds 2' });
    expect((await q.counts()).leased).toBe(2);
    await child.kill();
    let inHandlers = 0;
    let most = 0;
    let done = 0;
    worker(
      q,
      async () => {
        most = Math.max(most, ++inHandlers);
        await new Promise((r) => setTimeout(r, 5));
        inHandlers--;
        done++;
      },
      { concurrency: 4, cleanIntervalMs: 200 },
    );
    // Its clean reclaims the dead worker's 2 jobs; the whole budget (2) is then ours.
    await waitFor(() => done === 6, { timeoutMs: 10_000, what: 'all 6 done' });
    expect(most).toBe(2);
    // The last handler's return queues its complete, sent on the next turn of the loop.
    await waitFor(async () => (await q.counts()).leased === 0, { what: 'the last complete' });
  });

  it.each([
    ['throw new RateLimitError(ms)', 0],
    ['job.rateLimited(ms)', 0],
    ['throw new RateLimitError(ms)', 'auto'],
  ] as const)(
    '%s, prefetch %s: job back first, no attempt counted, nothing starts meanwhile',
    async (how, prefetch) => {
      const q = fx.queue<string>();
      await q.addBulk(['a', 'b', 'c'].map((data) => ({ data })));
      const runs: Array<{ data: string; attempt: number; at: number }> = [];
      let thrownAt = 0;
      worker(
        q,
        async (job) => {
          const at = await redisNow(q.client as never);
          runs.push({ data: job.data, attempt: job.attempt, at });
          if (runs.length === 1) {
            thrownAt = at;
            if (how.startsWith('job')) job.rateLimited(400);
            throw new RateLimitError(400);
          }
        },
        // (With prefetch, b and c were leased already: they go back behind a, unstarted.)
        { concurrency: 1, prefetch },
      );
      await waitFor(() => runs.length === 4, { what: '4 runs' });
      expect(runs.map((r) => [r.data, r.attempt])).toEqual([
        ['a', 1],
        ['a', 1],
        ['b', 1],
        ['c', 1],
      ]);
      // Redis time: the rerun's handler started after the pause ended.
      expect(runs[1]!.at - thrownAt).toBeGreaterThanOrEqual(400);
    },
  );

  it.each([
    ['throw new RateLimitError', Infinity, 86_400_000],
    ['throw new RateLimitError', Number.NaN, 1_000],
    ['job.rateLimited', Infinity, 86_400_000],
    ['job.rateLimited', Number.NaN, 1_000],
  ] as const)('%s(%s): the queue is held %s ms, no attempt counted', async (how, ms, held) => {
    const q = fx.queue<string>({ maxAttempts: 1 });
    const { id } = await q.add('a');
    let thrownAt = 0;
    worker(q, async (job) => {
      thrownAt = await redisNow(q.client as never);
      if (how === 'job.rateLimited') job.rateLimited(ms);
      throw new RateLimitError(ms);
    });
    const until = await waitFor(async () => (await q.flowState()).rateLimitedUntil, {
      what: 'the hold',
    });
    expect(until - thrownAt).toBeGreaterThanOrEqual(held);
    expect(until - thrownAt).toBeLessThan(held + 1_000);
    expect(await q.getJob(id)).toMatchObject({ state: 'pending', attemptsMade: 0 });
  });

  it('hand-offs respect pause and limits; a paused rate window still holds after resume', async () => {
    const q = fx.queue<number>({ leaseMs: LEASE_MS });
    await q.setRateLimit({ max: 2, durationMs: 60_000 });
    const at: number[] = [];
    worker(q, async (job) => {
      at.push(job.data);
    });
    await waitFor(async () => (await q.counts()).workers === 1);
    await q.add(1); // handed off or leased: the first of the window
    await waitFor(() => at.length === 1);
    await q.pause();
    await q.add(2);
    expect((await q.counts()).pending).toBe(1);
    await q.resume();
    await waitFor(() => at.length === 2);
    await q.add(3); // over the limit for the next minute: stays pending
    await q.add(4);
    await waitFor(async () => (await q.counts()).pending === 2);
    expect(at).toEqual([1, 2]);
    await q.setRateLimit(null);
    await q.add(5); // a wake-up: the worker looks again and takes all
    await waitFor(() => at.length === 5, { what: 'all after the limit is lifted' });
  });

  it.each(['rate', 'concurrency'])(
    "lifting the %s limit starts the jobs it held at once, not at a parked worker's next look",
    async (limit) => {
      const q = fx.queue<number>({ leaseMs: LEASE_MS });
      if (limit === 'rate') await q.setRateLimit({ max: 1, durationMs: 60_000 });
      else await q.setGlobalConcurrency(1);
      const started: number[] = [];
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      // Parked for a minute at most between looks: what wakes it is the limit's change.
      worker(
        q,
        async (job) => {
          started.push(job.data);
          if (job.data === 1) await held;
        },
        { concurrency: 4, idleTimeoutMs: 60_000 },
      );
      await waitFor(async () => (await q.counts()).workers === 1);
      await q.addBulk([1, 2, 3].map((data) => ({ data })));
      await waitFor(async () => started.length === 1 && (await q.counts()).pending === 2);
      if (limit === 'rate') await q.setRateLimit(null);
      else await q.setGlobalConcurrency(null);
      await waitFor(() => started.length === 3, { timeoutMs: 10_000, what: 'the held jobs' });
      expect(started.sort()).toEqual([1, 2, 3]);
      release();
    },
  );
});
