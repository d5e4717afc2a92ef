/**
 * A run that ends while Redis is out of reach for longer than a few retries: its outcome is sent
 * until Redis answers (lib/worker/runner.ts: told). Before, the worker gave up after 6 tries
 * (~3 s + 6 × commandTimeoutMs), the next reconcile gave the job back as if it had not run, and
 * it ran again: a failed attempt not counted (with maxAttempts 1, a second run), a DelayedError's
 * delay skipped.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { DelayedError, RECONNECT_OPTIONS, Worker, WorkQueue } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';

let redis: RedisHandle;
beforeAll(async () => {
  // Stopped and started again with its data: AOF, every write on disk.
  redis = await startRedis({ appendonly: true, appendfsync: 'always' });
});
afterAll(() => redis.dispose());

/** How long Redis stays down: past the old retries' ~3.7 s at commandTimeoutMs 100. */
const OUTAGE_MS = 5_000;

it('a fail and a DelayedError told while Redis is down for seconds: counted once, delay kept, no second run', async () => {
  // (Commands queued while down fail after one reconnect attempt, never sent later.)
  const client = new Redis(redis.url, { ...RECONNECT_OPTIONS, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  const q = new WorkQueue<string>(client, uniqueName(), {
    logger: false,
    maxAttempts: 1,
    leaseMs: 60_000,
    commandTimeoutMs: 100,
  });
  const runs: string[] = [];
  const events: string[] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const worker = new Worker(
    q,
    async (job) => {
      runs.push(job.data);
      await gate;
      if (job.data === 'fails') throw new Error('boom');
      if (job.data === 'steps') throw new DelayedError(60_000);
    },
    { concurrency: 2 },
  );
  worker.on('error', () => undefined); // Redis down
  worker.on('dead', (job) => events.push(`dead ${job.data}`));
  worker.on('leaseLost', (job) => events.push(`leaseLost ${job.data}`));
  await worker.start();
  const fails = await q.add('fails');
  const steps = await q.add('steps');
  await waitFor(() => runs.length === 2, { what: 'both running' });

  await redis.stop();
  open(); // both end while Redis is down
  await new Promise((resolve) => setTimeout(resolve, OUTAGE_MS));
  await redis.restart();

  await waitFor(async () => (await q.getJob(fails.id))?.state === 'dead' || runs.length > 2, {
    what: 'the failed job dead-lettered',
    timeoutMs: 15_000,
  });
  await waitFor(async () => (await q.getJob(steps.id))?.state === 'delayed' || runs.length > 2, {
    what: 'the step job waiting for its next step',
    timeoutMs: 15_000,
  });
  // A round of the lease loop after: a job given back would be leased and run by now.
  await q.add('after');
  await waitFor(() => runs.includes('after'), { what: 'a job added after', timeoutMs: 10_000 });
  expect(runs.sort()).toEqual(['after', 'fails', 'steps']);
  expect(await q.getJob(fails.id)).toMatchObject({ state: 'dead', attemptsMade: 1 });
  expect(await q.getJob(steps.id)).toMatchObject({ state: 'delayed', attemptsMade: 0 });
  expect(events).toEqual(['dead fails']);
  await worker.close();
  client.disconnect();
}, 40_000);
