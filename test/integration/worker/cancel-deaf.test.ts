/**
 * A cancel sent while the holder's notice connection is down (pub/sub keeps nothing): the worker
 * learns it from the renewal it makes once subscribed again, and now acknowledges it then — the
 * renewal answers the cancel's acknowledgement id (cancel.lua, extend_leases.lua). Before, it
 * dropped the job without a word and `cancel()` waited for its timeout (commandTimeoutMs).
 */
import { expect, it } from '@jest/globals';
import { Worker, WorkQueue } from '../../../lib/index.js';
import type { AddResult, Job } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { deafen } from '../../support/deafen.js';
import { privateRedis } from '../../support/private-redis.js';
import { waitFor } from '../../support/wait.js';

// A private Redis: the pub/sub connection killed is this file's worker's.
const redis = privateRedis();
const client = (retryMs: number) => redis.client({ retryStrategy: () => retryMs });

it('cancels the holder missed are acknowledged at its catch-up renewal, long before the timeout', async () => {
  const name = uniqueName();
  // The worker's connections (its notice connection too) reconnect 3 s after a drop.
  const q = new WorkQueue<string>(client(3_000), name, { logger: false });
  const runs: Job<string>[] = [];
  const worker = new Worker(
    q,
    (job) =>
      new Promise<void>((resolve) => {
        runs.push(job);
        job.signal.addEventListener('abort', () => resolve());
      }),
    { concurrency: 1, prefetch: 1, idleTimeoutMs: 30_000 },
  );
  worker.on('error', () => undefined);
  try {
    await worker.start();
    // One call: 'held' is handed off to the idle worker, and the call that adopts it leases
    // 'queued', which waits in the worker's buffer (prefetched).
    const [{ id }, queued] = (await q.addBulk([{ data: 'held' }, { data: 'queued' }])) as [
      AddResult,
      AddResult,
    ];
    await waitFor(() => runs.length === 1, { what: 'the job started' });
    await waitFor(async () => (await q.counts()).leased === 2, { what: 'the second prefetched' });

    // Deaf: its notice connection dropped (back in 3 s).
    await deafen(redis, q.keys.noticeChannel);

    // The canceller would wait two minutes for an acknowledgement that never comes.
    const canceller = new WorkQueue<string>(client(50), name, {
      logger: false,
      commandTimeoutMs: 120_000,
    });
    let resolved = 0;
    const cancelled = Promise.all(
      [id, queued.id].map((j) => canceller.cancel(j).finally(() => resolved++)),
    );
    await waitFor(() => resolved === 2, {
      timeoutMs: 20_000,
      what: 'both cancel() calls resolved by the acknowledgements of the catch-up renewal',
    });
    expect(await cancelled).toEqual([true, true]);
    expect(runs[0]!.signal.aborted).toBe(true);
    // The prefetched one never started; the worker's acknowledgements resolved both.
    expect(runs.map((r) => r.data)).toEqual(['held']);
    expect(await redis.admin.keys(q.keys.cancelAck('*'))).toHaveLength(2);
  } finally {
    await worker.close({ timeoutMs: 0 });
  }
});
