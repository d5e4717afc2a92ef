/**
 * Worker runtime: concurrency (up to N handlers at once, never more), batched leasing
 * (round trips far fewer than jobs), and pause()/resume().
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { WorkQueue } from '../../../lib/index.js';
import type { Handler } from '../../../lib/index.js';
import { commandStats, statsDelta } from '../../support/commandstats.js';
import { uniqueName } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';
import { deferred, type Deferred, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach((e) => console.error('worker error', e));

describe('Worker concurrency', () => {
  it('prefetch 0 holds exactly `concurrency` leases; pause() gives prefetched jobs back', async () => {
    const q = fx.queue<number>();
    await q.addBulk(Array.from({ length: 20 }, (_, i) => ({ data: i })));
    const gate = deferred<void>();
    const strict = worker(q, () => gate.promise, { concurrency: 3, prefetch: 0 });
    await waitFor(async () => strict.activeCount === 3 && (await q.counts()).leased === 3);
    const greedy = worker(q, () => gate.promise, { concurrency: 2, prefetch: 2 });
    await waitFor(async () => greedy.activeCount === 2 && (await q.counts()).leased === 3 + 2 + 2);
    greedy.pause();
    // Its two prefetched jobs go back to the queue; the two running ones stay leased.
    await waitFor(async () => (await q.counts()).leased === 3 + 2, {
      what: 'prefetched jobs released',
    });
    gate.resolve();
    await waitFor(async () => (await q.counts()).pending === 0 && (await q.counts()).leased === 0, {
      what: 'all done by the strict worker',
      timeoutMs: 10_000,
    });
  });

  it('keeps exactly `concurrency` handlers in flight under a backlog, never more', async () => {
    const q = fx.queue<number>();
    const N = 10;
    const JOBS = 300;
    let active = 0;
    let maxActive = 0;
    let maxLeased = 0;
    let done = 0;
    await q.addBulk(Array.from({ length: JOBS }, (_, i) => ({ data: i })));
    const w = worker(
      q,
      async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        await sleep(1 + Math.floor(Math.random() * 15));
        active--;
        done++;
      },
      { concurrency: N, prefetch: 1 },
    );
    // Redis' view, sampled meanwhile: never more than N leases held, plus the prefetched job.
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        maxLeased = Math.max(maxLeased, (await q.counts()).leased);
        await sleep(5);
      }
    })();
    await waitFor(() => done === JOBS, { what: `${JOBS} jobs`, timeoutMs: 20_000 });
    sampling = false;
    await sampler;
    expect(maxActive).toBe(N);
    expect(maxLeased).toBeGreaterThan(0);
    expect(w.prefetch).toBe(1);
    expect(maxLeased).toBeLessThanOrEqual(N + w.prefetch);
    expect(w.activeCount).toBe(0);
    // The last completes go out on the worker's next turn, after the handlers returned.
    await waitFor(
      async () => {
        const c = await q.counts();
        return c.pending === 0 && c.leased === 0;
      },
      { what: 'the last completes' },
    );
  });

  it("prefetch 'auto': many jobs ahead for jobs far shorter than a round trip, one for slow jobs", async () => {
    const fast = fx.queue<number>();
    await fast.addBulk(Array.from({ length: 3_000 }, (_, i) => ({ data: i })));
    let fastDone = 0;
    let maxFastLeased = 0;
    const quick = worker(fast, () => void fastDone++);
    expect(quick.prefetch).toBe(1); // nothing measured yet
    while (fastDone < 3_000) {
      maxFastLeased = Math.max(maxFastLeased, (await fast.counts()).leased);
      await sleep(1);
    }
    expect(quick.prefetch).toBeGreaterThan(4);
    expect(maxFastLeased).toBeGreaterThan(2); // more than concurrency 1 + one prefetched job

    const slow = fx.queue<number>();
    await slow.addBulk(Array.from({ length: 12 }, (_, i) => ({ data: i })));
    let slowDone = 0;
    let maxSlowLeased = 0;
    const lazy = worker(slow, async () => {
      maxSlowLeased = Math.max(maxSlowLeased, (await slow.counts()).leased);
      await sleep(200); // far longer than a round trip, even on a loaded machine
      slowDone++;
    });
    await waitFor(() => slowDone === 12, { what: '12 slow jobs', timeoutMs: 10_000 });
    expect(lazy.prefetch).toBe(1);
    expect(maxSlowLeased).toBeLessThanOrEqual(2);
  });

  it('a slow job does not hold back the other slots', async () => {
    const q = fx.queue<string>();
    const slow = deferred();
    const order: string[] = [];
    worker(
      q,
      async (job) => {
        if (job.data === 'slow') await slow.promise;
        order.push(job.data);
      },
      { concurrency: 2 },
    );
    await q.add('slow');
    await q.addBulk(Array.from({ length: 20 }, (_, i) => ({ data: `fast${i}` })));
    await waitFor(() => order.length === 20, { what: '20 fast jobs past the slow one' });
    expect(order).not.toContain('slow');
    slow.resolve();
    await waitFor(() => order.length === 21, { what: 'the slow job' });
  });
});

describe('Worker batching (private Redis, INFO commandstats)', () => {
  let redis: RedisHandle;
  let admin: Redis;
  const clients: Redis[] = [];
  beforeAll(async () => {
    redis = await startRedis();
    admin = new Redis(redis.url);
  });
  afterAll(async () => {
    await Promise.all([admin, ...clients].map((c) => c.quit().catch(() => c.disconnect())));
    await redis.dispose();
  });

  const cases: Array<[string, Handler<number, unknown>]> = [
    ['a synchronous handler', () => undefined],
    ['a handler that awaits 1 ms', () => sleep(1)],
    ['a handler that awaits 0-3 ms', () => sleep(Math.floor(Math.random() * 4))],
  ];
  it.each(cases)(
    'concurrency 50, 1,000 jobs, %s: lease/complete calls < jobs / 5',
    async (_label, handler) => {
      const client = new Redis(redis.url);
      clients.push(client);
      const q = new WorkQueue<number>(client, uniqueName(), { logger: false });
      const JOBS = 1_000;
      await q.addBulk(Array.from({ length: JOBS }, (_, i) => ({ data: i })));
      let completed = 0;
      const before = await commandStats(admin);
      const t0 = performance.now();
      const w = worker(q, handler, { concurrency: 50, leaseMs: 30_000 });
      w.on('completed', () => completed++);
      await waitFor(() => completed === JOBS, { what: `${JOBS} completions`, timeoutMs: 20_000 });
      const ms = performance.now() - t0;
      const delta = statsDelta(before, await commandStats(admin));
      // Scripts: EVALSHA (EVAL on a NOSCRIPT fallback, and from the heartbeat thread).
      const scriptCalls = (delta.evalsha ?? 0) + (delta.eval ?? 0);
      console.log(
        `batching, ${_label}: ${JOBS} jobs in ${ms.toFixed(0)} ms (${Math.round((JOBS / ms) * 1000)}/s), ` +
          `script calls ${scriptCalls} (${(JOBS / scriptCalls).toFixed(1)} jobs per call); ` +
          `commands ${JSON.stringify(delta)}`,
      );
      expect(scriptCalls).toBeGreaterThan(0);
      expect(scriptCalls).toBeLessThan(JOBS / 5);
      expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0 });
    },
  );
});

describe('Worker pause/resume', () => {
  it('pause() stops leasing while running jobs finish; resume() restarts it', async () => {
    const q = fx.queue<number>();
    const gates = new Map<number, Deferred>();
    const started: number[] = [];
    const completed: number[] = [];
    const w = worker(
      q,
      async (job) => {
        started.push(job.data);
        const g = deferred();
        gates.set(job.data, g);
        await g.promise;
      },
      { concurrency: 2, idleTimeoutMs: 200 },
    );
    w.on('completed', (job) => completed.push(job.data));
    await q.addBulk([1, 2].map((data) => ({ data })));
    await waitFor(() => started.length === 2, { what: 'two jobs running' });

    w.pause();
    expect(w.isPaused).toBe(true);
    await q.addBulk([3, 4, 5].map((data) => ({ data })));
    gates.get(1)!.resolve();
    gates.get(2)!.resolve();
    await waitFor(() => completed.length === 2, { what: 'running jobs finish while paused' });
    // Time must pass here: nothing may be leased while paused, even after idle timeouts.
    await sleep(800);
    expect(started).toEqual([1, 2]);
    expect(await q.counts()).toMatchObject({ pending: 3, leased: 0 });

    w.resume();
    expect(w.isPaused).toBe(false);
    await waitFor(() => started.length === 4, { what: 'leasing again after resume' });
    for (const n of started.slice(2)) gates.get(n)!.resolve();
    await waitFor(() => started.length === 5, { what: 'the last job' });
    gates.get(started[4]!)!.resolve();
    await waitFor(() => completed.length === 5, { what: 'all 5 completed' });
    expect(started.sort()).toEqual([1, 2, 3, 4, 5]);
  });
});
