/**
 * Cancels that reach a busy worker together (issue 24, item 5): a slot freed by the first cancel
 * notice is filled only after every notice read with it was handled, so a prefetched job whose
 * cancel arrived in the same read never starts — not even to be aborted a moment later.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { WorkQueue } from '../../../lib/index.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
// The canceller sends the cancels of one turn as one pipeline: Redis runs them back to back and
// their notices reach the worker's subscription in one read.
const pipelined = new Redis(testRedisUrl(), { enableAutoPipelining: true });
afterAll(async () => {
  await pipelined.quit().catch(() => pipelined.disconnect());
  await fx.cleanup();
});
const worker = workersClosedAfterEach();

describe('cancels arriving together', () => {
  it('5 concurrent cancels at concurrency 2 + prefetch 3: no prefetched job ever starts (20 rounds)', async () => {
    // The cancel script in Redis' cache first, as it is once a queue ran: on a Redis that never
    // ran it, each cancel is answered NOSCRIPT and sent again with its text, and five of those
    // can reach Redis in several reads — their notices too (round 0 failed so when another test
    // file loaded the machine). The worker holds refills for the notices of one read
    // (run-table.ts, holdRefills); a prefetched job whose notice comes in a later read may
    // start, and is aborted at once (still never after its cancel resolved).
    const warm = fx.queue<string>();
    await warm.cancel((await warm.add('warm-up')).id);
    for (let round = 0; round < 20; round++) {
      const q = fx.queue<string>();
      const canceller = new WorkQueue<string>(pipelined, q.name, {
        prefix: q.options.prefix,
        logger: false,
      });
      const starts: Array<{ data: string; at: number }> = [];
      const w = worker(
        q,
        async (job) => {
          starts.push({ data: job.data, at: performance.now() });
          // The five jobs hold their slots until their cancel aborts them.
          if (job.data === 'marker') return;
          await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
        },
        { concurrency: 2, prefetch: 3 },
      );
      const added = await q.addBulk(['a', 'b', 'c', 'd', 'e'].map((data) => ({ data })));
      await w.start();
      await waitFor(async () => starts.length === 2 && (await q.counts()).leased === 5, {
        what: `round ${round}: 2 jobs running and 3 prefetched`,
      });
      const running = new Set(starts.map((s) => s.data));
      // Every cancel in the same turn: one pipeline.
      const cancelled = new Map<string, number>();
      const results = await Promise.all(
        added.map(async ({ id }, i) => {
          const ok = await canceller.cancel(id);
          cancelled.set('abcde'[i]!, performance.now());
          return ok;
        }),
      );
      expect(results).toEqual([true, true, true, true, true]);
      // The worker goes on: a later job runs (and, being last, shows the notices were all read).
      const marker = await q.add('marker');
      await waitFor(() => starts.some((s) => s.data === 'marker'), {
        what: `round ${round}: marker ${marker.id} to run`,
      });
      const prefetchedStarts = starts.filter((s) => s.data !== 'marker' && !running.has(s.data));
      expect({ round, prefetchedStarts }).toEqual({ round, prefetchedStarts: [] });
      // (And so none started after its cancel resolved.)
      expect(starts.filter((s) => s.at > (cancelled.get(s.data) ?? Infinity))).toEqual([]);
      await Promise.all([w.close({ timeoutMs: 1_000 }), canceller.close()]);
    }
  }, 60_000);
});
