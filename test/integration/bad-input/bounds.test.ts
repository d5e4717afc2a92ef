/**
 * Values at the edges of what the API accepts (a probe found each mishandled): a maxAttempts
 * past 14 digits kept exactly through retries; a delayed job due past the longest timer
 * (~24.8 days) does not make a worker look again at once, over and over; replicaAcks past a
 * safe integer, unknown `events` options and close() arguments other than `{ timeoutMs }` are
 * refused, every problem listed, nothing written or closed.
 */
import { afterAll, expect, it, jest } from '@jest/globals';
import { Worker, WorkQueue, type WorkQueueOptions } from '../../../lib/index.js';
import { problemsOf } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { deferred, waitParked, workersClosedAfterEach } from '../../support/worker.js';

const realSetTimeout = setTimeout;
const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

const problems = problemsOf;

it('a per-job maxAttempts up to 2^53 - 1 is kept exactly through a failed attempt', async () => {
  const q = fx.queue<string>();
  for (const m of [2 ** 53 - 1, 123_456_789_012_345, 100_000_000_000_001]) {
    const { id } = await q.add('x', { maxAttempts: m, id: `m${m}` });
    const [lease] = await q.lease();
    expect(lease!.maxAttempts).toBe(m);
    expect(await q.fail(lease!, new Error('boom'))).toBe('retried');
    expect(await q.promote(id)).toBe(true);
    const [again] = await q.lease();
    expect(again).toMatchObject({ id, attempt: 2, maxAttempts: m });
    expect(await q.complete(again!)).toBe(true);
  }
});

it('a job due past the longest timer does not make a busy worker look again at once', async () => {
  // Node fires a timer given more than 2^31 - 1 ms at once: the worker then looked again, and
  // again, for the rest of its idle wait. Every timer the worker arms is within the bound.
  const longest = 2 ** 31 - 1;
  const delays: number[] = [];
  const spy = jest.spyOn(globalThis, 'setTimeout');
  spy.mockImplementation(((fn: () => void, ms?: number) => {
    delays.push(ms ?? 0);
    return realSetTimeout(fn, ms);
  }) as typeof setTimeout);
  try {
    const q = fx.queue<string>();
    await q.add('in 30 days', { delayMs: 30 * 86_400_000 });
    const gate = deferred();
    const w = worker(q, () => gate.promise, { concurrency: 4 });
    await w.start();
    await waitParked(fx.client(), q, w.workerId);
    const { id } = await q.add('a');
    // Running it, with room for more: idle again, waiting on Redis.
    await waitFor(async () => (await q.getJob(id))?.state === 'leased', { what: 'a leased' });
    await waitParked(fx.client(), q, w.workerId);
    // Its completion is answered while the worker waits: the answer names the next due job.
    gate.resolve();
    await waitFor(async () => (await q.counts()).leased === 0, { what: 'a completed' });
    await waitParked(fx.client(), q, w.workerId);
    expect(delays.filter((ms) => !(ms <= longest))).toEqual([]);
    expect(Math.max(...delays)).toBeGreaterThan(24 * 86_400_000); // it did look that far
    expect((await q.counts()).delayed).toBe(1);
  } finally {
    spy.mockRestore();
  }
});

it("replicaAcks past a safe integer, maxPayloadBytes past Redis' largest argument and unknown events options are refused", async () => {
  const opts = {
    replicaAcks: 1e19,
    events: { maxlen: 5 },
    maxPayloadBytes: 2 ** 29 + 1,
  } as unknown as WorkQueueOptions;
  expect(await problems(() => new WorkQueue(fx.client(), 'bounds', opts))).toEqual([
    'maxPayloadBytes must be at most 536870912 (512 MiB: Redis takes no larger argument), got 536870913',
    'replicaAcks must be an integer >= 0, got 10000000000000000000',
    'events: unknown option "maxlen"; known: maxLen',
  ]);
});

it('close() takes { timeoutMs? } only: anything else is refused and closes nothing', async () => {
  const q = fx.queue<string>();
  const done: string[] = [];
  const w: Worker<string, unknown> = worker(q, async (job) => void done.push(job.data));
  await w.start();
  const bad: unknown[] = [true, 5_000, { force: true }, { timeout: 0, timeoutMs: -1 }];
  const refused = await Promise.all(bad.map((a) => problems(() => w.close(a as never))));
  expect(refused).toEqual([
    ["close takes { timeoutMs? }, got true (BullMQ's close(true) is timeoutMs: 0)"],
    ["close takes { timeoutMs? }, got 5000 (BullMQ's close(true) is timeoutMs: 0)"],
    [`close: unknown option "force" (BullMQ's force is timeoutMs: 0); known: timeoutMs`],
    [
      'close: unknown option "timeout" (timeoutMs); known: timeoutMs',
      'timeoutMs must be a number >= 0, got -1',
    ],
  ]);
  await q.add('still running');
  await waitFor(() => done.length === 1, { what: 'the worker to run a job after the refusals' });
  await w.close({ timeoutMs: 1_000 });
  expect(await q.getWorkers()).toEqual([]);
});
