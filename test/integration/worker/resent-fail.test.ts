/**
 * A Worker's fail whose reply was lost (the connection dropped after Redis ran it; ioredis sends
 * it again after the reconnect): the attempt counts once, and the worker tells what the first
 * run did — `retried` or `dead`, not `leaseLost` (fail.lua: the job's meta keeps the token of
 * its last failed lease, and a re-send of that fail answers from it). Likewise a DelayedError step.
 */
import { afterAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { DelayedError, RateLimitError, WorkQueue } from '../../../lib/index.js';
import { deleteKeys, uniqueName } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { replyDroppingProxy } from '../../support/reply-dropping-proxy.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();
/** A step's delay (ms), odd enough to mark its call. */
const STEP_MS = 7_654_321;

async function failWithReplyLost(maxAttempts: number, how: 'fail' | 'step' | 'rate' = 'fail') {
  const marker = uniqueName('marker').toLowerCase();
  const step = how !== 'fail';
  // (A step's call carries its delay: 'd<ms>'; a rate limit's, its ms; a fail's, the error.)
  const proxy = await replyDroppingProxy(
    how === 'step' ? `d${STEP_MS}` : how === 'rate' ? `${STEP_MS}` : marker,
  );
  const client = new Redis(proxy.url); // default options: re-sends unanswered commands
  client.on('error', () => undefined);
  const prefix = uniqueName('t');
  try {
    // (A long backoff: the retried job does not run again within the test.)
    const q = new WorkQueue<string>(client, uniqueName(), {
      logger: false,
      prefix,
      maxAttempts,
      backoff: { type: 'fixed', delayMs: 60_000 },
    });
    const check = new WorkQueue(fx.client(), q.name, { logger: false, prefix });
    const events: string[] = [];
    let runs = 0;
    let warmRuns = 0;
    const w = worker(q, (job: { data: string }) => {
      if (job.data !== 'warm') runs++;
      if (how === 'fail') throw new Error(marker); // the fail carries the error: the marker
      if (how === 'step') throw new DelayedError(STEP_MS);
      // (The warm job is held 1 ms, then completes; the other holds the queue ~2 h.)
      if (job.data !== 'warm') throw new RateLimitError(STEP_MS);
      if (++warmRuns === 1) throw new RateLimitError(1);
    });
    for (const e of ['retried', 'dead', 'leaseLost'] as const) {
      w.on(e, (job: { id: string }) => events.push(`${e} ${job.id}`));
    }
    w.on('error', () => undefined); // the dropped connection
    await w.start();
    // A first job loads the outcome's script (a NOSCRIPT's reply is not the one to lose).
    const warm = await q.add('warm');
    const warmEnded = how === 'rate' ? ['completed'] : ['delayed', 'dead'];
    await waitFor(async () => warmEnded.includes((await check.getJob(warm.id))?.state ?? ''), {
      what: 'the first run ended',
    });
    await client.ping(); // (its reply, and so its events, came before)
    await new Promise((resolve) => setImmediate(resolve));
    events.length = 0;
    proxy.arm();
    const { id } = await q.add('x');
    await waitFor(() => proxy.dropped === 1, { what: "the reply of the run's outcome lost" });
    // After the reconnect the re-sent call goes first: a PING behind it answers after it did.
    await client.ping();
    await new Promise((resolve) => setImmediate(resolve)); // (the worker's handling of its answer)
    await waitFor(() => step || events.length > 0, { what: 'the outcome of the run' });
    await w.close();
    return { id, events, runs, job: await check.getJob(id) };
  } finally {
    client.disconnect();
    await proxy.close();
    await deleteKeys(fx.client(), `${prefix}:*`);
  }
}

it('retried: the re-sent fail answers retried, the attempt counted once', async () => {
  const { id, events, runs, job } = await failWithReplyLost(3);
  expect(events).toEqual([`retried ${id}`]);
  expect(runs).toBe(1);
  expect(job).toMatchObject({ state: 'delayed', attemptsMade: 1 });
});

it('dead: the re-sent fail answers dead, the job dead-lettered once', async () => {
  const { id, events, runs, job } = await failWithReplyLost(1);
  expect(events).toEqual([`dead ${id}`]);
  expect(runs).toBe(1);
  expect(job).toMatchObject({ state: 'dead', attemptsMade: 1 });
});

it('a DelayedError step: the re-sent call answers as the first did, no leaseLost, no attempt counted', async () => {
  const { events, runs, job } = await failWithReplyLost(1, 'step');
  expect(events).toEqual([]);
  expect(runs).toBe(1);
  expect(job).toMatchObject({ state: 'delayed', attemptsMade: 0 });
});

it('a RateLimitError: the re-sent call answers as the first did, no leaseLost, no attempt counted', async () => {
  const { events, runs, job } = await failWithReplyLost(1, 'rate');
  expect(events).toEqual([]);
  expect(runs).toBe(1);
  expect(job).toMatchObject({ state: 'pending', attemptsMade: 0 });
});

it('a re-send that comes after the next attempt failed too (no backoff): it still answers retried', async () => {
  // Under dropped connections the job was retried, leased by another worker and failed there
  // before this fail's re-send came: the job's meta kept only the later lease (leaseLost then).
  const q = fx.queue<string>({ maxAttempts: 6, backoff: { type: 'fixed', delayMs: 0 } });
  const a = await q.registerWorker();
  const b = await q.registerWorker();
  const { id } = await q.add('x');
  const [first] = await q.lease({ count: 1, workerId: a });
  expect((await q.failAttempt(first!, new Error('e1'), { delayMs: 0 })).outcome).toBe('retried');
  for (let i = 0; i < 3; i++) {
    const [next] = await q.lease({ count: 1, workerId: b });
    expect((await q.failAttempt(next!, new Error('e2'), { delayMs: 0 })).outcome).toBe('retried');
  }
  expect((await q.failAttempt(first!, new Error('e1'), { delayMs: 0 })).outcome).toBe('retried');
  expect(await q.getJob(id)).toMatchObject({ state: 'pending', attemptsMade: 4 });
  // One run past what meta f remembers (4): a stale call again, 'lost'.
  const [fifth] = await q.lease({ count: 1, workerId: b });
  await q.failAttempt(fifth!, new Error('e3'), { delayMs: 0 });
  expect((await q.failAttempt(first!, new Error('e1'), { delayMs: 0 })).outcome).toBe('lost');
  expect(await q.getJob(id)).toMatchObject({ attemptsMade: 5 });
});
