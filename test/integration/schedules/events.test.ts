/**
 * The events of a schedule tick's job, on every path it takes (docs/schedules.md#events-of-a-tick),
 * and getSchedule's lastFireAt: the latest tick that fired. (Before: a tick job was made with no
 * 'added' nor 'delayed', one made late was placed with no event at all, a dropped one vanished
 * with none; lastFireAt counted ticks whose time came but that nothing promoted, and dropped ones.)
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import type { WorkQueue } from '../../../lib/index.js';
import { parseEntry } from '../../../lib/events/parse.js';
import { redisNow } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { leasedSoon, tickOf } from './support.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/** The kinds each job's events came in, by job id, and how many entries the log holds. */
async function eventsOf(
  q: WorkQueue<number>,
): Promise<{ kinds: Map<string, string[]>; entries: number }> {
  const entries = await fx.client().xrange(q.keys.eventLog, '-', '+');
  const kinds = new Map<string, string[]>();
  for (const e of entries.flatMap(([id, fields]) => parseEntry(id, fields))) {
    kinds.set(e.id, [...(kinds.get(e.id) ?? []), e.kind]);
  }
  return { kinds, entries: entries.length };
}

/** Wait (nobody leasing nor cleaning) until Redis time is past `ms`. */
const until = (q: WorkQueue<number>, ms: number, what: string) =>
  waitFor(async () => (await redisNow(q.client as Redis)) > ms, { what, timeoutMs: 10_000 });

/** The ticks of schedule `s` waiting in the delayed set, ascending. */
async function delayedTicks(q: WorkQueue<number>): Promise<number[]> {
  return (await q.getJobs('delayed')).map((j) => tickOf(j.id)).sort((a, b) => a - b);
}

describe('schedules: the events of a tick job', () => {
  it('made ahead: added and delayed (one entry); on time: promoted, then active', async () => {
    const q = fx.queue<number>();
    await q.upsertSchedule('s', { every: 1_000 }, { data: 1, group: 'g' });
    const ticks = await delayedTicks(q);
    let log = await eventsOf(q);
    expect(log.entries).toBe(1);
    expect([...log.kinds.keys()]).toEqual(ticks.map((t) => `s:${t}`));
    for (const k of log.kinds.values()) expect(k).toEqual(['added', 'delayed']);
    // Its time comes, nothing promotes it: it has not fired.
    await until(q, ticks[0]! + 20, 'the first tick due');
    expect((await q.getSchedule('s'))!.lastFireAt).toBeNull();
    const [job] = await leasedSoon(q, { count: 1 }, { what: 'the first tick' });
    expect(job!.id).toBe(`s:${ticks[0]}`);
    log = await eventsOf(q);
    expect(log.kinds.get(job!.id)).toEqual(['added', 'delayed', 'promoted', 'active']);
    // A grouped tick's events carry its group, as any grouped job's do.
    const all = (await fx.client().xrange(q.keys.eventLog, '-', '+')).flatMap(([id, f]) =>
      parseEntry(id, f),
    );
    expect(all.every((e) => 'group' in e && e.group === 'g')).toBe(true);
    expect((await q.getSchedule('s'))!.lastFireAt).toBe(ticks[0]);
    await q.removeSchedule('s');
  });

  it("made late (within missedAfterMs): pending at once, 'added' only; missed ones: cancelled", async () => {
    const q = fx.queue<number>();
    await q.upsertSchedule('s', { every: 300, missedAfterMs: 1_000 }, { data: 1 });
    const made = await delayedTicks(q);
    const last = made[made.length - 1]!;
    // Nobody cleans past the last tick made: the next ticks come due before they are made.
    await until(q, last + 450, 'the ticks after the last made due');
    await q.clean(); // promotes the ticks made (drops the missed ones), then makes the late ones
    const late = (await q.getJobs('pending')).map((j) => j.id).filter((id) => tickOf(id) > last);
    expect(late.length).toBeGreaterThan(0);
    const log = await eventsOf(q);
    for (const id of late) expect(log.kinds.get(id)).toEqual(['added']);
    // The ticks made ahead: fired, or (older than missedAfterMs, 'once') dropped.
    const ahead = made.map((t) => log.kinds.get(`s:${t}`)!.join(' '));
    expect(ahead).toContain('added delayed cancelled');
    expect(ahead).toContain('added delayed promoted');
    for (const k of ahead)
      expect(['added delayed cancelled', 'added delayed promoted']).toContain(k);
    for (const t of made) {
      const fired = log.kinds.get(`s:${t}`)!.includes('promoted');
      expect((await q.getJob(`s:${t}`)) !== null).toBe(fired);
    }
    // The late ones fired: the latest of them is lastFireAt.
    expect((await q.getSchedule('s'))!.lastFireAt).toBe(Math.max(...late.map(tickOf)));
    await q.removeSchedule('s');
    const jobs = await q.lease({ count: 100 });
    expect(jobs.map((j) => j.id)).toEqual(expect.arrayContaining(late));
    expect((await eventsOf(q)).kinds.get(late[0]!)).toEqual(['added', 'active']);
  });

  it("dropped as missed ('skip'): added, delayed, cancelled; it never fired", async () => {
    const q = fx.queue<number>();
    await q.upsertSchedule('s', { every: 1_000, missed: 'skip', missedAfterMs: 1 }, { data: 1 });
    const [first] = await delayedTicks(q);
    await until(q, first! + 20, 'the first tick past its window');
    expect(await q.lease({ count: 10 })).toEqual([]);
    expect(await q.getJob(`s:${first}`)).toBeNull();
    expect((await eventsOf(q)).kinds.get(`s:${first}`)).toEqual(['added', 'delayed', 'cancelled']);
    expect((await q.getSchedule('s'))!.lastFireAt).toBeNull();
    await q.removeSchedule('s');
  });

  it('dropped by skipIfRunning: added, delayed, cancelled; lastFireAt stays the running tick', async () => {
    const q = fx.queue<number>();
    await q.upsertSchedule('s', { every: 200 }, { data: 1, skipIfRunning: true });
    const [first] = await leasedSoon(q, { count: 1, leaseMs: 60_000 }, { what: 'the first tick' });
    const held = tickOf(first!.id);
    await until(q, held + 450, 'two more ticks due');
    await q.clean();
    expect(await q.lease({ count: 10 })).toEqual([]);
    const log = await eventsOf(q);
    for (const t of [held + 200, held + 400]) {
      expect(log.kinds.get(`s:${t}`)).toEqual(['added', 'delayed', 'cancelled']);
    }
    expect((await q.getSchedule('s'))!.lastFireAt).toBe(held);
    expect(await q.complete(first!)).toBe(true);
    await q.removeSchedule('s');
  });

  it('lastFireAt is the latest tick time fired: an earlier tick firing after a promote() does not take it back', async () => {
    const q = fx.queue<number>();
    await q.upsertSchedule('s', { every: 1_000 }, { data: 1 });
    const ticks = await delayedTicks(q);
    expect(ticks.length).toBeGreaterThan(1);
    expect(await q.promote(`s:${ticks[1]}`)).toBe(true);
    expect((await q.getSchedule('s'))!.lastFireAt).toBe(ticks[1]);
    await until(q, ticks[0]! + 20, 'the first tick due');
    const jobs = await leasedSoon(q, { count: 10 }, { what: 'the two ticks' });
    expect(jobs.map((j) => j.id).sort()).toEqual([`s:${ticks[0]}`, `s:${ticks[1]}`].sort());
    expect((await q.getSchedule('s'))!.lastFireAt).toBe(ticks[1]);
    await q.removeSchedule('s');
  });

  it('a changed upsert and removeSchedule: the unfired ticks are cancelled (one entry each)', async () => {
    const q = fx.queue<number>();
    await q.upsertSchedule('s', { every: 500 }, { data: 1 });
    const old = await delayedTicks(q);
    expect(old.length).toBeGreaterThan(1);
    const before = (await eventsOf(q)).entries;
    expect(await q.upsertSchedule('s', { every: 500 }, { data: 2 })).toBe('updated');
    const made = await delayedTicks(q);
    let log = await eventsOf(q);
    // One entry drops the old ticks, one makes the new ones.
    expect(log.entries).toBe(before + 2);
    for (const t of old) expect(log.kinds.get(`s:${t}`)!.slice(-1)).toEqual(['cancelled']);
    expect(await q.removeSchedule('s')).toBe(true);
    log = await eventsOf(q);
    expect(log.entries).toBe(before + 3);
    for (const t of made)
      expect(log.kinds.get(`s:${t}`)).toEqual(['added', 'delayed', 'cancelled']);
    expect((await q.counts()).delayed).toBe(0);
  });
});
