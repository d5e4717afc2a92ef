/**
 * A cancel the holder did not hear (its notice connection down, or not listening yet: a worker
 * that just started) of a job whose run then ended: its outcome is refused (the job is gone) and
 * no renewal names the lease any more. The worker now acknowledges the cancel from the record
 * cancel.lua left (cx:<token>) when the outcome comes back refused; before, `cancel()` waited out
 * commandTimeoutMs (5 s on defaults: the core API's example paid it on every run).
 */
import { expect, it } from '@jest/globals';
import { DelayedError, Worker, WorkQueue } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { deafen } from '../../support/deafen.js';
import { privateRedis } from '../../support/private-redis.js';
import { waitFor } from '../../support/wait.js';
import { deferred } from '../../support/worker.js';

// A private Redis: the pub/sub connection killed is this file's worker's.
const redis = privateRedis();
const client = (retryMs: number) => redis.client({ retryStrategy: () => retryMs });

it.each(['completes', 'fails', 'is delayed'] as const)(
  'a run that %s after a cancel its worker did not hear acknowledges it: cancel() resolves',
  async (outcome) => {
    const name = uniqueName();
    // The worker's connections (its notice connection too) reconnect 60 s after a drop.
    const q = new WorkQueue<string>(client(60_000), name, { logger: false, maxAttempts: 1 });
    const started = deferred();
    const release = deferred();
    const lost: string[] = [];
    const worker = new Worker(
      q,
      async () => {
        started.resolve();
        await release.promise; // (ignores its signal: it runs to its end)
        if (outcome === 'fails') throw new Error('late failure');
        if (outcome === 'is delayed') throw new DelayedError(1_000);
      },
      { concurrency: 1 },
    );
    worker.on('error', () => undefined);
    worker.on('leaseLost', (_job, why) => lost.push(why));
    try {
      await worker.start();
      const { id } = await q.add('x');
      await started.promise;
      // Deaf: its notice connection dropped (back in a minute).
      await deafen(redis, q.keys.noticeChannel);

      // The canceller would wait two minutes for an acknowledgement.
      const canceller = new WorkQueue<string>(client(50), name, {
        logger: false,
        commandTimeoutMs: 120_000,
      });
      let resolved = false;
      const cancelled = canceller.cancel(id).finally(() => (resolved = true));
      await waitFor(async () => (await q.getJob(id)) === null, { what: 'the job cancelled' });
      expect(resolved).toBe(false); // (waits for the holder)
      release.resolve();
      await waitFor(() => resolved, {
        timeoutMs: 10_000,
        what: "cancel() resolved by the worker's acknowledgement",
      });
      expect(await cancelled).toBe(true);
      expect(lost).toHaveLength(1);
      expect(await redis.admin.keys(q.keys.cancelAck('*'))).toHaveLength(1);
      await canceller.close();
    } finally {
      release.resolve();
      await worker.close({ timeoutMs: 0 });
    }
  },
);
