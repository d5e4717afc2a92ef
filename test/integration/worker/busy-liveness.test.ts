/**
 * A worker whose every slot runs a job does not wait on Redis (it would pop jobs an idle worker
 * can start): it looks again when a run ends. A slot that frees without a run ending — its
 * prefetched job given back — must make it look too, or it never leases again: here a group
 * paused while the worker's notice connection was down, which the catch-up hears.
 */
import { expect, it } from '@jest/globals';
import { Worker, WorkQueue } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { deafen, subscribers } from '../../support/deafen.js';
import { privateRedis } from '../../support/private-redis.js';
import { waitFor } from '../../support/wait.js';

const redis = privateRedis();
const client = (retryMs: number) => redis.client({ retryStrategy: () => retryMs });

it('a worker whose prefetched job the notices catch-up gives back leases a job added afterwards', async () => {
  const name = uniqueName();
  const q = new WorkQueue<string>(client(2_000), name, { logger: false });
  const admin = new WorkQueue<string>(client(50), name, { logger: false });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const started: string[] = [];
  const worker = new Worker(
    q,
    async (job) => {
      started.push(job.data);
      if (job.data === 'held') await gate;
    },
    { concurrency: 1, prefetch: 1, idleTimeoutMs: 60_000 },
  );
  worker.on('error', () => undefined);
  try {
    // Both leased by the worker's first call: 'held' runs, 'queued' waits in its buffer.
    await q.add('held', { group: 'H' });
    await q.add('queued', { group: 'G' });
    await worker.start();
    await waitFor(() => started.includes('held'), { what: 'held started' });
    await waitFor(async () => (await q.counts()).leased === 2, { what: 'queued prefetched' });
    await deafen(redis, q.keys.noticeChannel);
    release(); // held ends while deaf: queued stays in the buffer (no start before a renewal)
    await waitFor(async () => (await q.counts()).leased === 1, { what: 'held completed' });
    await admin.pauseGroup('G');
    // The notice connection comes back (2 s): the catch-up gives 'queued' back (group paused).
    await waitFor(async () => (await subscribers(redis, q.keys.noticeChannel)) === 1, {
      timeoutMs: 10_000,
      what: 'subscribed again',
    });
    await waitFor(async () => (await q.counts()).leased === 0, { what: 'queued given back' });
    await q.add('after');
    await waitFor(() => started.includes('after'), {
      timeoutMs: 10_000,
      what: "'after' to start (idle timeout 60 s)",
    });
    expect(started).toEqual(['held', 'after']);
  } finally {
    await worker.close({ timeoutMs: 0 });
  }
}, 30_000);
