/**
 * A schedule tick's job that fired is a job like any other, also while it waits in the delayed
 * set again (a retry's backoff, a DelayedError step): removing or changing its schedule leaves
 * it, and an admin promote() or changeDelay() of a tick fires it as its time coming would.
 * (Before: removeSchedule and a changed upsert took such a job for an unfired tick and dropped
 * it; a promoted tick kept its missed window and was dropped at its retry, and did not count
 * for skipIfRunning; a changeDelay past the window dropped it.)
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import type { LeasedJob, WorkQueue } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

type Data = { v: number };

async function redisNow(q: WorkQueue<Data>): Promise<number> {
  const [s, us] = await (q.client as Redis).time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** Lease (which promotes due delayed jobs) until job `id` comes, or any job when none named. */
async function leaseWhenDue(q: WorkQueue<Data>, id?: string): Promise<LeasedJob<Data>> {
  return waitFor(
    async () => {
      const jobs = await q.lease({ count: 10, leaseMs: 60_000 });
      const other = jobs.filter((j) => id !== undefined && j.id !== id);
      if (other.length > 0) await q.release(other);
      return jobs.find((j) => id === undefined || j.id === id);
    },
    { what: id ? `job ${id} leased` : 'a tick leased' },
  );
}

/** The delayed tick that comes first. */
async function firstTick(q: WorkQueue<Data>): Promise<{ id: string; at: number }> {
  const ticks = await q.getJobs('delayed');
  ticks.sort((a, b) => a.at! - b.at!);
  expect(ticks.length).toBeGreaterThan(0);
  return { id: ticks[0]!.id, at: ticks[0]!.at! };
}

/** A schedule every second whose ticks are missed 1 ms late ('skip'), and its first tick. */
async function skipSchedule(): Promise<{ q: WorkQueue<Data>; tick: { id: string; at: number } }> {
  const q = fx.queue<Data>();
  await q.upsertSchedule(
    's',
    { every: 1_000, missed: 'skip', missedAfterMs: 1 },
    { data: { v: 1 } },
  );
  return { q, tick: await firstTick(q) };
}

describe("a fired tick's job waiting in the delayed set again", () => {
  it.each([
    ['retry backoff', 'removeSchedule'],
    ['retry backoff', 'a changed upsert'],
    ['DelayedError step', 'removeSchedule'],
    ['DelayedError step', 'a changed upsert'],
  ])('during a %s, %s leaves it: it runs again and completes', async (wait, change) => {
    const q = fx.queue<Data>();
    await q.upsertSchedule('s', { every: 1_000 }, { data: { v: 1 } });
    const job = await leaseWhenDue(q);
    if (wait === 'retry backoff') {
      expect(await q.fail(job, new Error('transient'), { delayMs: 300 })).toBe('retried');
    } else {
      expect(await q.moveToDelayed(job, 300)).toBeGreaterThan(0);
    }
    expect((await q.getJob(job.id))?.state).toBe('delayed');
    if (change === 'removeSchedule') expect(await q.removeSchedule('s')).toBe(true);
    else expect(await q.upsertSchedule('s', { every: 1_000 }, { data: { v: 2 } })).toBe('updated');
    expect((await q.getJob(job.id))?.state).toBe('delayed');
    const again = await leaseWhenDue(q, job.id);
    expect(again.data).toEqual({ v: 1 });
    expect(again.attempt).toBe(wait === 'retry backoff' ? 2 : 1);
    expect(await q.complete(again)).toBe(true);
    expect((await q.getJob(job.id))?.state).toBe('completed');
    expect((await q.repair()).fixes).toEqual([]);
    await q.removeSchedule('s');
  });
});

describe('promote() of a tick', () => {
  it('fires it: a retry after its missed window still runs', async () => {
    const { q, tick } = await skipSchedule();
    expect(await q.promote(tick.id)).toBe(true);
    const job = await leaseWhenDue(q, tick.id);
    // Its retry comes due after tick + missedAfterMs: the window of a tick that fired is over.
    expect(await q.fail(job, new Error('transient'), { delayMs: 1_500 })).toBe('retried');
    await q.removeSchedule('s');
    const again = await leaseWhenDue(q, tick.id);
    expect(again.attempt).toBe(2);
    expect(await redisNow(q)).toBeGreaterThan(tick.at + 1);
    expect(await q.complete(again)).toBe(true);
  });

  it('makes it the latest tick: with skipIfRunning, the next tick is dropped while it runs', async () => {
    const q = fx.queue<Data>();
    await q.upsertSchedule('s', { every: 1_000 }, { data: { v: 1 }, skipIfRunning: true });
    const tick = await firstTick(q);
    expect(await q.promote(tick.id)).toBe(true);
    const running = await leaseWhenDue(q, tick.id);
    // The next tick's time passes while the promoted one runs: it is dropped when it comes due.
    const next = tick.at + 1_000;
    expect((await q.getJob(`s:${next}`))?.state).toBe('delayed');
    await waitFor(async () => (await redisNow(q)) > next + 50, { what: 'the next tick due' });
    expect(await q.lease({ count: 10, leaseMs: 60_000 })).toEqual([]);
    expect(await q.getJob(`s:${next}`)).toBeNull();
    expect(await q.complete(running)).toBe(true);
    await q.removeSchedule('s');
  });
});

describe('changeDelay() of a tick', () => {
  it("past its missed window ('skip'): it fires at the new time", async () => {
    const { q, tick } = await skipSchedule();
    expect(await q.changeDelay(tick.id, 1_500)).toBe(true);
    await q.removeSchedule('s'); // (not its job: it has not fired, and goes with its schedule)
    const { q: q2, tick: t2 } = await skipSchedule();
    expect(await q2.changeDelay(t2.id, 1_500)).toBe(true);
    const job = await leaseWhenDue(q2, t2.id);
    expect(await redisNow(q2)).toBeGreaterThan(t2.at + 1);
    expect(await q.getJob(tick.id)).toBeNull();
    expect(await q2.complete(job)).toBe(true);
    await q2.removeSchedule('s');
  });

  it("the latest tick made ('once'), moved past the next tick: the next ticks made do not drop it as missed", async () => {
    const q = fx.queue<Data>();
    await q.upsertSchedule('s', { every: 1_000 }, { data: { v: 1 } });
    const ticks = await q.getJobs('delayed');
    const latest = ticks.reduce((a, b) => (b.at! > a.at! ? b : a));
    const to = latest.at! + 2_500; // after its next tick + missedAfterMs (1 000)
    expect(await q.changeDelay(latest.id, new Date(to))).toBe(true);
    // The next ticks are made (clean), then its time comes.
    await waitFor(
      async () => {
        await q.clean();
        return (await q.getJobs('delayed')).some((j) => j.id !== latest.id && j.at! > latest.at!);
      },
      { what: 'the next ticks made', timeoutMs: 8_000 },
    );
    const job = await waitFor(
      async () => {
        const jobs = await q.lease({ count: 10, leaseMs: 60_000 });
        const mine = jobs.find((j) => j.id === latest.id);
        const other = jobs.filter((j) => j.id !== latest.id);
        if (other.length > 0) await q.release(other);
        return mine ?? ((await q.getJob(latest.id)) === null ? 'dropped' : undefined);
      },
      { what: 'the moved tick leased', timeoutMs: 8_000 },
    );
    expect(job).not.toBe('dropped');
    expect(await redisNow(q)).toBeGreaterThanOrEqual(to);
    await q.removeSchedule('s');
  });
});
