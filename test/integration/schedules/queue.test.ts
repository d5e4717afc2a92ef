/**
 * Schedules on the core queue, no Worker: upsert (idempotent, changed spec), remove, get/list,
 * bad input, racing top-ups, and the missed-tick policies after an outage.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { WorkQueueError, type WorkQueue } from '../../../lib/index.js';
import { keysMatching } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

async function redisNow(c: Redis): Promise<number> {
  const [s, us] = await c.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** Every key of the queue with its DUMP and TTL: equal snapshots, equal Redis state. */
async function snapshot(c: Redis, q: WorkQueue<unknown>): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const k of await keysMatching(c, `${q.keys.base}*`)) {
    out[k] = [(await c.dumpBuffer(k))?.toString('hex'), await c.pttl(k)];
  }
  return out;
}

const tickOf = (id: string) => Number(id.slice(id.lastIndexOf(':') + 1));

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
    const jobs = await waitFor(
      async () => {
        const got = await q.lease({ count: 10 });
        return got.length > 0 ? got : null;
      },
      { what: 'a tick of the new spec' },
    );
    expect(jobs.map((j) => j.data)).toEqual(jobs.map(() => 'new'));
    expect(tickOf(jobs[0]!.id)).toBe(info.nextFireAt);
    // Changing the template alone is a change too.
    expect(await q.upsertSchedule('s', { every: 100 }, { data: 'newer' })).toBe('updated');
  });

  it('a change drops a tick whose time came but that nothing promoted yet (it never fired)', async () => {
    const q = fx.queue<string>();
    const c = fx.client();
    await q.upsertSchedule('s', { every: 300 }, { data: 'old' });
    const due = (await q.getSchedule('s'))!.nextFireAt!;
    // No worker, no clean, no lease: the tick's job stays in the delayed set past its time.
    await waitFor(async () => (await redisNow(c)) > due + 50, { what: 'the tick overdue' });
    expect((await q.getJob(`s:${due}`))?.state).toBe('delayed');
    expect(await q.upsertSchedule('s', { every: 300 }, { data: 'new' })).toBe('updated');
    expect(await q.getJob(`s:${due}`)).toBeNull();
    const jobs = await waitFor(
      async () => {
        const got = await q.lease({ count: 10 });
        return got.length > 0 ? got : null;
      },
      { what: 'a tick of the changed schedule' },
    );
    expect(jobs.map((j) => j.data)).toEqual(jobs.map(() => 'new'));
    expect(jobs.every((j) => tickOf(j.id) > due)).toBe(true);
  });

  it('…also when a top-up ran after its time (it still had not fired)', async () => {
    const q = fx.queue<string>();
    const c = fx.client();
    await q.upsertSchedule('s', { every: 300 }, { data: 'old' });
    const due = (await q.getSchedule('s'))!.nextFireAt!;
    await waitFor(async () => (await redisNow(c)) > due + 50, { what: 'the tick overdue' });
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

describe('schedules: tick jobs', () => {
  it('a failed tick job retried after its backoff is not dropped as missed', async () => {
    const q = fx.queue<string>();
    const backoff = { type: 'fixed' as const, delayMs: 300 };
    const spec = { every: 100, missed: 'skip' as const, missedAfterMs: 50 };
    await q.upsertSchedule('s', spec, { data: 'x', maxAttempts: 2, backoff });
    const [job] = await waitFor(
      async () => {
        const got = await q.lease({ count: 1 });
        return got.length ? got : null;
      },
      { what: 'a tick' },
    );
    await q.removeSchedule('s'); // only this job from now on
    expect(await q.fail(job!, new Error('boom'))).toBe('retried');
    const again = await waitFor(
      async () => {
        const got = await q.lease({ count: 10 });
        return got.length ? got : null;
      },
      { what: 'the retry', timeoutMs: 3_000 },
    );
    expect(again.map((j) => [j.id, j.attempt])).toEqual([[job!.id, 2]]);
  });

  it('skipIfRunning: ticks while the job of an earlier tick exists are dropped, then ticks resume', async () => {
    const c = fx.client();
    const q = fx.queue<number>({}, c);
    const template = { data: 1, skipIfRunning: true };
    await q.upsertSchedule('s', { every: 100 }, template);
    expect((await q.getSchedule('s'))!.template).toEqual(template);
    const [first] = await waitFor(
      async () => {
        const got = await q.lease({ count: 10, leaseMs: 60_000 });
        return got.length ? got : null;
      },
      { what: 'the first tick' },
    );
    const held = tickOf(first!.id);
    // Hold it past several ticks: none of them fires.
    await waitFor(async () => (await redisNow(c)) > held + 550, { what: '5 ticks to pass' });
    await q.clean();
    expect(await q.lease({ count: 10 })).toEqual([]);
    expect(await q.complete(first!)).toBe(true);
    const [next] = await waitFor(
      async () => {
        const got = await q.lease({ count: 10 });
        return got.length ? got : null;
      },
      { what: 'a tick after the job completed' },
    );
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
    const after = await waitFor(
      async () => {
        const got = await q.lease({ count: 100 });
        return got.length > 0 ? got.map((j) => j.id) : null;
      },
      { what: 'the next tick after the restart' },
    );
    expect(after).toEqual([`s:${next}`]);
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
