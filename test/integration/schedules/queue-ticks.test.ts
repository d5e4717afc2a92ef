/**
 * Schedules on the core queue, no Worker: the jobs of their ticks (a retried tick job,
 * skipIfRunning, codec 'buffer'), and the missed-tick policies after an outage. (Storing them:
 * queue-storing.test.ts.)
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { WorkQueue } from '../../../lib/index.js';
import { redisNow } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { leasedSoon, snapshot, tickOf } from './support.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('schedules: tick jobs', () => {
  it('one clean() tops up every due schedule, however many (not 100 a clean)', async () => {
    const c = fx.client();
    const q = fx.queue<number>({}, c);
    const n = 350;
    await Promise.all(
      Array.from({ length: n }, (_, i) => q.upsertSchedule(`s${i}`, { every: 1_000 }, { data: i })),
    );
    const due = async () => c.zcount(q.keys.key('schedulesDue'), '-inf', await redisNow(c));
    await waitFor(async () => (await due()) === n, {
      what: 'every schedule due for its next ticks',
    });
    const report = await q.clean();
    expect(report.ticksMade).toBeGreaterThanOrEqual(n);
    expect(await due()).toBe(0);
  });

  it('a failed tick job retried after its backoff is not dropped as missed', async () => {
    const q = fx.queue<string>();
    const backoff = { type: 'fixed' as const, delayMs: 300 };
    const spec = { every: 100, missed: 'skip' as const, missedAfterMs: 50 };
    await q.upsertSchedule('s', spec, { data: 'x', maxAttempts: 2, backoff });
    const [job] = await leasedSoon(q, { count: 1 }, { what: 'a tick' });
    await q.removeSchedule('s'); // only this job from now on
    expect(await q.fail(job!, new Error('boom'))).toBe('retried');
    const again = await leasedSoon(q, { count: 10 }, { what: 'the retry', timeoutMs: 3_000 });
    expect(again.map((j) => [j.id, j.attempt])).toEqual([[job!.id, 2]]);
  });

  it('skipIfRunning: ticks while the job of an earlier tick exists are dropped, then ticks resume', async () => {
    const c = fx.client();
    const q = fx.queue<number>({}, c);
    const template = { data: 1, skipIfRunning: true };
    await q.upsertSchedule('s', { every: 100 }, template);
    expect((await q.getSchedule('s'))!.template).toEqual(template);
    const [first] = await leasedSoon(q, { count: 10, leaseMs: 60_000 }, { what: 'the first tick' });
    const held = tickOf(first!.id);
    // Hold it past several ticks: none of them fires.
    await waitFor(async () => (await redisNow(c)) > held + 550, { what: '5 ticks to pass' });
    await q.clean();
    expect(await q.lease({ count: 10 })).toEqual([]);
    expect(await q.complete(first!)).toBe(true);
    const [next] = await leasedSoon(q, { count: 10 }, { what: 'a tick after the job completed' });
    expect(tickOf(next!.id) - held).toBeGreaterThan(550);
    // Overlap by default: a held tick does not stop the next ones.
    await q.upsertSchedule('s', { every: 100 }, { data: 2 });
    const jobs: string[] = [];
    await waitFor(
      async () => {
        for (const j of await q.lease({ count: 10, leaseMs: 60_000 })) jobs.push(j.id);
        return jobs.length >= 3;
      },
      { what: 'three overlapping ticks' },
    );
    expect(await q.removeSchedule('s')).toBe(true);
    // Nothing the schedule left behind breaks an invariant of the queue.
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('tick jobs drained never fire; nextFireAt is then the tick the schedule makes next, which fires', async () => {
    const c = fx.client();
    const q = fx.queue<number>({}, c);
    await q.upsertSchedule('s', { every: 400 }, { data: 1 });
    const before = (await q.getSchedule('s'))!.nextFireAt!;
    const made = await q.getJobs('delayed', { limit: 100 });
    expect(made.length).toBeGreaterThan(0);
    const lastMade = Math.max(...made.map((j) => tickOf(j.id)));
    expect(await q.drain({ delayed: true })).toBeGreaterThanOrEqual(made.length);
    // Its next tick's job is gone: not reported as the next to fire (it said `before`).
    const next = (await q.getSchedule('s'))!.nextFireAt!;
    expect(before).toBeLessThanOrEqual(lastMade);
    expect(next).toBe(lastMade + 400);
    // clean() makes it when due (the queue has no cleaner here): it is the first to fire.
    const [job] = await waitFor(
      async () => {
        await q.clean();
        const got = await q.lease({ count: 10 });
        return got.length > 0 ? got : null;
      },
      { what: 'the next tick', timeoutMs: 5_000 },
    );
    expect(tickOf(job!.id)).toBe(next);
  });

  it("codec 'buffer': the payload is stored and given as bytes", async () => {
    const c = fx.client();
    const q = fx.queue<Buffer>({ codec: 'buffer' }, c);
    const data = Buffer.from([0, 255, 1, 2]);
    expect(await q.upsertSchedule('b', { every: 60_000 }, { data })).toBe('created');
    const before = await snapshot(c, q as WorkQueue<unknown>);
    expect(await q.upsertSchedule('b', { every: 60_000 }, { data: Buffer.from(data) })).toBe(
      'unchanged',
    );
    expect(await snapshot(c, q as WorkQueue<unknown>)).toEqual(before);
    expect((await q.getSchedule('b'))!.template.data).toEqual(data);
    const tick = (await q.getSchedule('b'))!.nextFireAt!;
    expect((await q.getJob(`b:${tick}`))!.data).toEqual(data);
    expect(await q.upsertSchedule('b', { every: 60_000 }, { data: Buffer.from([9]) })).toBe(
      'updated',
    );
  });
});

describe('schedules: missed ticks after an outage (nobody leases or cleans)', () => {
  async function outage(missed: 'once' | 'skip') {
    const c = fx.client();
    const q = fx.queue<number>({}, c);
    await q.upsertSchedule('s', { every: 300, missed, missedAfterMs: 200 }, { data: 1 });
    const made = (await q.counts()).delayed;
    expect(made).toBeGreaterThan(3); // ~2 s of ticks ahead
    const first = (await q.getSchedule('s'))!.nextFireAt!;
    const last = first + (made - 1) * 300;
    // The outage: past the last tick made, its tolerance and three more ticks.
    await waitFor(async () => (await redisNow(c)) > last + 200 + 900, {
      what: 'the outage to pass',
      timeoutMs: 10_000,
    });
    const restart = await redisNow(c);
    const fired = (await q.lease({ count: 100 })).map((j) => j.id);
    await q.clean(); // the first clean after the restart makes the next ticks
    const next = (await q.getSchedule('s'))!.nextFireAt!;
    expect(next).toBeGreaterThan(restart);
    expect((next - first) % 300).toBe(0);
    const after = (
      await leasedSoon(q, { count: 100 }, { what: 'the next tick after the restart' })
    ).map((j) => tickOf(j.id));
    // The first tick after the restart, on schedule: `next`, or the one before it when the
    // machine was slow enough for it to pass between the clean and the read of nextFireAt.
    expect(after).toHaveLength(1);
    expect(after[0]).toBeGreaterThan(restart);
    expect((after[0]! - first) % 300).toBe(0);
    expect(after[0]).toBeLessThanOrEqual(next);
    expect(await q.counts()).toMatchObject({ pending: 0 });
    expect((await q.repair()).fixes).toEqual([]);
    return { fired, last };
  }

  it("'once' (default): one job for the missed period (the latest tick made), then on schedule", async () => {
    const { fired, last } = await outage('once');
    expect(fired).toEqual([`s:${last}`]);
  });

  it("'skip': no job for the missed ticks, then on schedule", async () => {
    const { fired } = await outage('skip');
    expect(fired).toEqual([]);
  });
});
