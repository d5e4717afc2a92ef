/**
 * Schedules on the core queue, no Worker: upsert (idempotent, changed spec), remove, get/list,
 * bad input and racing top-ups. (Their tick jobs and missed ticks: queue-ticks.test.ts.)
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { WorkQueueError } from '../../../lib/index.js';
import { redisNow } from '../../support/core.js';
import { keysMatching } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { leasedSoon, snapshot, tickOf } from './support.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('schedules: storing', () => {
  it('upserting the same schedule again changes nothing in Redis', async () => {
    const c = fx.client();
    const q = fx.queue<{ to: string }>({}, c);
    const spec = { cron: '0 9 * * 1-5', tz: 'Europe/Berlin', startAt: new Date(2_000_000_000_000) };
    const template = { data: { to: 'all' }, name: 'digest', priority: 3 };
    expect(await q.upsertSchedule('digest', spec, template)).toBe('created');
    const before = await snapshot(c, q);
    expect(Object.keys(before).length).toBeGreaterThan(3);
    const again = { ...spec, startAt: 2_000_000_000_000 }; // the same time as a number
    expect(await q.upsertSchedule('digest', again, { ...template })).toBe('unchanged');
    expect(await snapshot(c, q)).toEqual(before);
    const info = await q.getSchedule('digest');
    expect(info).toMatchObject({
      id: 'digest',
      spec: { cron: '0 9 * * 1-5', tz: 'Europe/Berlin', startAt: 2_000_000_000_000 },
      template: { data: { to: 'all' }, name: 'digest', priority: 3 },
      lastFireAt: null,
      ticks: 1,
      ended: false,
    });
    // 2033-05-18 is a Wednesday: 09:00 CEST is 07:00Z.
    expect(new Date(info!.nextFireAt!).toISOString()).toBe('2033-05-18T07:00:00.000Z');
    const job = await q.getJob(`digest:${info!.nextFireAt}`);
    expect(job).toMatchObject({
      state: 'delayed',
      name: 'digest',
      priority: 3,
      at: info!.nextFireAt,
    });
  });

  it('bad input: one INVALID_ARGUMENT listing every problem, nothing written', async () => {
    const c = fx.client();
    const q = fx.queue({ codec: 'string' }, c);
    const err = await q
      .upsertSchedule(
        's',
        { cron: '61 * * * *', tz: 'Mars/Base', startAt: 2000, endAt: 1000, limit: 0 },
        { data: 42, priority: 12 },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkQueueError);
    expect((err as WorkQueueError).code).toBe('INVALID_ARGUMENT');
    const problems = (err as WorkQueueError).problems.join('\n');
    for (const p of [
      /tz "Mars\/Base"/,
      /cron "61 \* \* \* \*" cannot be parsed/,
      /endAt is before startAt/,
      /limit/,
      /priority/,
      /codec 'string'/,
    ]) {
      expect(problems).toMatch(p);
    }
    const every = await q
      .upsertSchedule('s', { every: 1.5 }, { data: 'x' })
      .catch((e: unknown) => e);
    expect((every as WorkQueueError).problems).toEqual([
      'every must be a positive integer (ms) up to 1e12, got 1.5',
    ]);
    const both = (await q
      .upsertSchedule('s', { every: 0, cron: '* * * *' } as never, { data: 'x', id: 'no' } as never)
      .catch((e: unknown) => e)) as WorkQueueError;
    expect(both.problems).toEqual([
      'spec needs exactly one of every and cron',
      'every must be a positive integer (ms) up to 1e12, got 0',
      'cron "* * * *" has 4 fields; give 5 (minute first) or 6 (second first)',
      'template: unknown key "id"',
    ]);
    // An array is no spec (not read as a spec whose `every` is Array.prototype.every).
    const array = (await q
      .upsertSchedule('s', [] as never, { data: 'x' })
      .catch((e: unknown) => e)) as WorkQueueError;
    expect(array.problems).toEqual(['spec must be an object { every } or { cron, tz? }']);
    // A template without data: said once (not also as an undefined payload).
    const noData = (await q
      .upsertSchedule('s', { every: 1_000 }, {} as never)
      .catch((e: unknown) => e)) as WorkQueueError;
    expect(noData.problems).toEqual(['template.data is missing']);
    expect(await keysMatching(c, `${q.keys.base}*`)).toEqual([]);
  });

  it('list pages by id; remove drops the ticks not yet fired; get of a removed one is null', async () => {
    const q = fx.queue<number>();
    for (const id of ['c', 'a', 'b']) await q.upsertSchedule(id, { every: 60_000 }, { data: 1 });
    expect((await q.listSchedules()).map((s) => s.id)).toEqual(['a', 'b', 'c']);
    expect((await q.listSchedules({ offset: 1, limit: 1 })).map((s) => s.id)).toEqual(['b']);
    expect((await q.listSchedules({ limit: 1000 })).map((s) => s.id)).toEqual(['a', 'b', 'c']);
    // A bad page: both problems listed, nothing sent.
    for (const [offset, limit] of [
      [-1, 0],
      [1.5, 1001],
      [Number.NaN, '2'],
    ]) {
      await expect(
        q.listSchedules({ offset, limit } as { offset: number; limit: number }),
      ).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
        problems: [
          expect.stringMatching(/^offset must be/),
          expect.stringMatching(/^limit must be/),
        ],
      });
    }
    const b = (await q.getSchedule('b'))!;
    expect(await q.getJob(`b:${b.nextFireAt}`)).toMatchObject({ state: 'delayed' });
    expect(await q.counts()).toMatchObject({ delayed: 3 });
    expect(await q.removeSchedule('b')).toBe(true);
    expect(await q.removeSchedule('b')).toBe(false);
    expect(await q.getSchedule('b')).toBeNull();
    expect(await q.getJob(`b:${b.nextFireAt}`)).toBeNull();
    expect(await q.counts()).toMatchObject({ delayed: 2 });
    expect((await q.listSchedules()).map((s) => s.id)).toEqual(['a', 'c']);
  });

  it('a changed spec drops the old ticks not yet fired and takes effect from the next tick', async () => {
    const q = fx.queue<string>();
    await q.upsertSchedule('s', { every: 3_600_000 }, { data: 'old' });
    const old = (await q.getSchedule('s'))!;
    expect(await q.upsertSchedule('s', { every: 100 }, { data: 'new' })).toBe('updated');
    expect(await q.getJob(`s:${old.nextFireAt}`)).toBeNull();
    const info = (await q.getSchedule('s'))!;
    expect(info.template.data).toBe('new');
    expect(info.nextFireAt! - Date.now()).toBeLessThan(10_000);
    const jobs = await leasedSoon(q, { count: 10 }, { what: 'a tick of the new spec' });
    expect(jobs.map((j) => j.data)).toEqual(jobs.map(() => 'new'));
    expect(tickOf(jobs[0]!.id)).toBe(info.nextFireAt);
    // Changing the template alone is a change too.
    expect(await q.upsertSchedule('s', { every: 100 }, { data: 'newer' })).toBe('updated');
  });

  /** Schedule 's' (every 300 ms, data 'old') on a new queue, its first tick `due` past its time. */
  async function overdueTick() {
    const q = fx.queue<string>();
    const c = fx.client();
    await q.upsertSchedule('s', { every: 300 }, { data: 'old' });
    const due = (await q.getSchedule('s'))!.nextFireAt!;
    // No worker, no clean, no lease: the tick's job stays in the delayed set past its time.
    await waitFor(async () => (await redisNow(c)) > due + 50, { what: 'the tick overdue' });
    return { q, due };
  }

  it('a change drops a tick whose time came but that nothing promoted yet (it never fired)', async () => {
    const { q, due } = await overdueTick();
    expect((await q.getJob(`s:${due}`))?.state).toBe('delayed');
    expect(await q.upsertSchedule('s', { every: 300 }, { data: 'new' })).toBe('updated');
    expect(await q.getJob(`s:${due}`)).toBeNull();
    const jobs = await leasedSoon(q, { count: 10 }, { what: 'a tick of the changed schedule' });
    expect(jobs.map((j) => j.data)).toEqual(jobs.map(() => 'new'));
    expect(jobs.every((j) => tickOf(j.id) > due)).toBe(true);
  });

  it('…also when a top-up ran after its time (it still had not fired)', async () => {
    const { q, due } = await overdueTick();
    // A top-up between clean()'s promotion and its own (what clean() runs for a due schedule).
    const internal = q as unknown as { schedules: { topUp(id: string): Promise<number> } };
    await internal.schedules.topUp('s');
    expect((await q.getJob(`s:${due}`))?.state).toBe('delayed');
    expect(await q.upsertSchedule('s', { every: 300 }, { data: 'new' })).toBe('updated');
    expect(await q.getJob(`s:${due}`)).toBeNull();
  });

  it('a tick whose time came before any clean made it (a restart after an outage) is made late and fires, not lost', async () => {
    const q = fx.queue<string>();
    const c = fx.client();
    await q.upsertSchedule('s', { every: 1_000, missedAfterMs: 10_000 }, { data: 'x' });
    const first = (await q.getSchedule('s'))!.nextFireAt!;
    // The upsert made the ticks of its horizon (first, first + 1 s); nothing runs until the
    // third one's time has passed (the first clean after a restart comes one interval late).
    await waitFor(async () => (await redisNow(c)) > first + 2_100, { what: 'the third tick past' });
    await q.clean();
    // (Later ticks may be due too on a slow machine: the three are what counts.)
    const ticks = (await q.lease({ count: 10 })).map((j) => tickOf(j.id));
    expect(ticks.filter((t) => t <= first + 2_000)).toEqual([first, first + 1_000, first + 2_000]);
  });

  it('racing top-ups (many cleans at once, an upsert re-sent) add each tick once; limit ends it', async () => {
    const q = fx.queue<number>();
    await q.upsertSchedule('s', { every: 50, limit: 30 }, { data: 7 });
    // Make every clean find the schedule due.
    await q.client.zadd(q.keys.key('schedulesDue'), 0, 's');
    await Promise.all([
      q.clean(),
      q.clean(),
      q.clean(),
      q.upsertSchedule('s', { every: 50, limit: 30 }, { data: 7 }),
    ]);
    const ids: string[] = [];
    await waitFor(
      async () => {
        await q.clean();
        for (const j of await q.lease({ count: 100 })) ids.push(j.id);
        return (
          (await q.getSchedule('s'))!.ended && (await q.counts()).delayed === 0 && ids.length >= 30
        );
      },
      { what: '30 ticks', timeoutMs: 10_000 },
    );
    for (const j of await q.lease({ count: 100 })) ids.push(j.id);
    expect(ids.length).toBe(30);
    expect(new Set(ids).size).toBe(30);
    const ticks = ids.map(tickOf).sort((a, b) => a - b);
    ticks.forEach((t, i) => i > 0 && expect(t - ticks[i - 1]!).toBe(50));
    expect(await q.getSchedule('s')).toMatchObject({ ticks: 30, ended: true, nextFireAt: null });
  });
});
