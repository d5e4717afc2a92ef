/**
 * Every operation at the largest size its API accepts (issue: Lua's unpack() and redis.call()
 * take at most ~8,000 values; a script that failed after moving jobs lost them).
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Worker } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

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
});
