/**
 * Every operation at the largest size its API accepts (issue: Lua's unpack() and redis.call()
 * take at most ~8,000 values; a script that failed after moving jobs lost them).
 */
import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { Worker, WorkQueueError } from '../../../lib/index.js';
import { CALL_UNITS } from '../../../lib/util/call-share.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { gatedHandler } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

const MAX = 10_000;
/**
 * These tests are about sizes, not deadlines: 10,000 calls sent at once queue up on one
 * connection, and each call's commandTimeoutMs runs from when it was sent, so a loaded machine
 * could time out the last ones while Redis still works through the first.
 */
const patient = { commandTimeoutMs: 60_000 };
const jobs = (n: number) => Array.from({ length: n }, (_, i) => ({ data: i }));

describe('sizes at the maxima', () => {
  it('lease, extend, completeAndLease and release of 10,000 jobs each work in one call', async () => {
    const q = fx.queue<number>({ ...patient, leaseMs: 60_000 });
    expect((await q.addBulk(jobs(MAX + 2_000))).length).toBe(MAX + 2_000);
    const leased = await q.lease({ count: MAX });
    expect(leased.length).toBe(MAX);
    expect(await q.counts()).toMatchObject({ pending: 2_000, leased: MAX });
    const extended = await q.extend(leased, 90_000);
    expect(extended.every(Boolean)).toBe(true);
    const released = await q.release(leased.slice(0, MAX / 2));
    expect(released.every(Boolean)).toBe(true);
    expect(await q.counts()).toMatchObject({ pending: 7_000, leased: MAX / 2 });
    // With results (kept with their jobs, and in the 'completed' events): a section of the
    // event entry per ~1000 fields (one of 5,000 jobs with results failed unpack()'s limit,
    // after the script had written the completions).
    const done = await q.completeAndLease(
      leased.slice(MAX / 2).map((lease, i) => ({ lease, result: { i } })),
      { count: MAX },
    );
    expect(done.completed.length).toBe(MAX / 2);
    expect(done.completed.every(Boolean)).toBe(true);
    expect(done.jobs.length).toBe(7_000);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 7_000, completed: 1_000 });
    const last = leased[MAX - 1]!;
    expect(await q.getJob(last.id)).toMatchObject({ state: 'completed', result: { i: 4_999 } });
    const repaired = await q.repair();
    expect(repaired.fixes).toEqual([]);
  }, 120_000);

  it('addBulk of 25,000 jobs, listDead/purgeDead of 10,000+ dead jobs', async () => {
    const q = fx.queue<number>({ ...patient, maxAttempts: 1, maxDead: 20_000 });
    await q.addBulk(jobs(25_000));
    expect((await q.counts()).pending).toBe(25_000);
    const all = await q.lease({ count: MAX });
    await Promise.all(all.map((l) => q.fail(l, new Error('x'))));
    const page = await q.listDead({ limit: MAX });
    expect(page.length).toBe(MAX);
    expect(await q.purgeDead()).toBe(MAX);
    expect((await q.counts()).dead).toBe(0);
  }, 120_000);

  it('a Worker with concurrency 10,000 and prefetch 10,000 completes every job', async () => {
    const q = fx.queue<number>(patient);
    await q.addBulk(jobs(25_000));
    let ran = 0;
    // (Each handler returns a result: completions of thousands of jobs with results at once.)
    const w = new Worker(q, () => ++ran, { concurrency: MAX, prefetch: MAX });
    const errors: unknown[] = [];
    w.on('error', (e) => errors.push(e));
    try {
      await waitFor(async () => (await q.counts()).pending + (await q.counts()).leased === 0, {
        timeoutMs: 60_000,
        what: 'every job to complete',
      });
    } finally {
      await w.close({ timeoutMs: 5_000 });
    }
    expect(ran).toBeGreaterThanOrEqual(25_000);
    expect(errors).toEqual([]);
  }, 120_000);

  // ioredis writes a script call as one string, and V8's longest is ~512 Mi UTF-16 units: an
  // addBulk or a Worker's completes past it failed ("Invalid string length"; a Worker retried
  // the same call for good). Their calls now carry at most CALL_UNITS of payloads or results.
  const big = (n: number) => String(n).repeat(12 * 1024 * 1024); // 12 Mi units each
  const bigOptions = { ...patient, maxPayloadBytes: 16 * 1024 * 1024 };
  const unitsOf = (values: readonly unknown[]) =>
    values.reduce<number>((n, v) => n + JSON.stringify(v).length, 0);

  it('addBulk splits its scripts by payload size too: 3 jobs of 12 Mi units go in 2 scripts, in order', async () => {
    const q = fx.queue<string>(bigOptions);
    await q.ready();
    const sends = jest.spyOn(q.client, 'sendCommand');
    const added = await q.addBulk([1, 2, 3].map((n) => ({ data: big(n) })));
    expect(added.map((a) => a.id)).toEqual(['1', '2', '3']);
    // (Each sent by its sha first; an EVAL follows one the script cache did not have.)
    expect(sends.mock.calls.filter(([c]) => c.name === 'evalsha')).toHaveLength(2);
    sends.mockRestore();
    for (const n of [1, 2, 3]) expect((await q.getJob(String(n)))?.data).toBe(big(n));
  });

  it(`a Worker's completes carry at most CALL_UNITS (${CALL_UNITS}) of results a call; all complete`, async () => {
    const q = fx.queue<number, string>(bigOptions);
    const calls = jest.spyOn(q, 'completeAndLease');
    const { runs, handler } = gatedHandler<number>();
    const w = new Worker(q, handler, { concurrency: 3 });
    try {
      await q.addBulk([1, 2, 3].map((n) => ({ data: n })));
      await waitFor(() => runs.length === 3, { what: '3 jobs running' });
      for (const r of runs) r.gate.resolve(big(r.job.data));
      await waitFor(async () => (await q.counts()).completed === 3, { what: '3 completed' });
    } finally {
      await w.close();
    }
    const sent = calls.mock.calls.map(([items]) => unitsOf(items.map((it) => it.result)));
    expect(Math.max(...sent)).toBeLessThanOrEqual(CALL_UNITS);
    expect(sent.filter((u) => u > 0).length).toBeGreaterThanOrEqual(2);
    for (const n of [1, 2, 3]) expect((await q.getJob(String(n)))?.result).toBe(big(n));
  }, 60_000);

  it('completeAndLease called with results past CALL_UNITS in all: refused, nothing completed', async () => {
    const q = fx.queue<number, string>({ ...bigOptions, leaseMs: 60_000 });
    await q.addBulk([1, 2, 3].map((n) => ({ data: n })));
    const leased = await q.lease({ count: 3 });
    const e = await q
      .completeAndLease(leased.map((lease) => ({ lease, result: big(1) })))
      .catch((x: unknown) => x as WorkQueueError);
    expect(e).toBeInstanceOf(WorkQueueError);
    expect((e as WorkQueueError).code).toBe('INVALID_ARGUMENT');
    expect(String(e)).toMatch(/complete them in several calls/);
    expect(await q.counts()).toMatchObject({ leased: 3, completed: 0 });
  });
});
