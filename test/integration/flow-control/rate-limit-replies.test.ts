/**
 * RateLimitError while a lease reply is on its way to the same worker: the jobs in that reply
 * were leased before Redis had the hold, and must not start during it (docs/flow-control.md:
 * "no worker of the queue leases anything for ms"; the worker's prefetched jobs go back).
 * Each round: an idle worker (concurrency 1, prefetch 3), 8 jobs added at once; the first one
 * throws at once, while the worker's lease call for its prefetch is usually still in flight
 * (without the fix a job started inside the hold in most rounds).
 */
import { afterAll, expect, it } from '@jest/globals';
import { RateLimitError } from '../../../lib/index.js';
import { redisNow } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { waitParked, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach((e) => console.error('worker error', e));
const HOLD_MS = 600;

it.each([
  [1, 'tiny'],
  [2, 'tiny'],
  [3, 'tiny'],
])(
  'round %s, %s payloads: no job starts during the hold, those leased before it included',
  async (_, size) => {
    const pad = size === 'tiny' ? '' : 'x'.repeat(20_000);
    const q = fx.queue<{ i: number; pad: string }>();
    const runs: Array<{ data: number; at: number }> = [];
    let thrown = false;
    const w = worker(
      q,
      async (job) => {
        if (job.data.i === 0 && !thrown) {
          thrown = true;
          throw new RateLimitError(HOLD_MS); // at once: no await before it
        }
        runs.push({ data: job.data.i, at: await redisNow(q.client as never) });
      },
      { concurrency: 1, prefetch: 3 },
    );
    await w.start();
    await waitParked(fx.client(), q, w.workerId); // idle: the adds hand it the first job
    await q.addBulk(Array.from({ length: 8 }, (_, i) => ({ data: { i, pad } })));
    const until = await waitFor(async () => (await q.flowState()).rateLimitedUntil, {
      what: 'the hold',
    });
    await waitFor(() => runs.length === 8, { timeoutMs: 10_000, what: '8 runs' });
    // Redis time: every run (the rate-limited job's included) started once the hold ended.
    for (const r of runs)
      expect({ data: r.data, late: r.at >= until }).toEqual({ data: r.data, late: true });
    expect(runs.map((r) => r.data).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  },
);
