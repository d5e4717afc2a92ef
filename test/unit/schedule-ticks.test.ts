/** Tick times of schedules: cron across DST changes in two time zones, `every`, limit and endAt. */
import { describe, expect, it } from '@jest/globals';
import { resolveQueueOptions } from '../../lib/options.js';
import {
  cronTicks,
  horizonOf,
  nextTicks,
  HORIZON_MS,
  type StoredDef,
} from '../../lib/schedules/spec.js';

const iso = (ts: number[]) => ts.map((t) => new Date(t).toISOString());
const at = (s: string) => Date.parse(s);

describe('cron ticks across DST', () => {
  it('Europe/Berlin, spring forward (02:00 -> 03:00 on 2026-03-29): 02:30 fires once, at the jump', () => {
    expect(iso(cronTicks('30 2 * * *', 'Europe/Berlin', at('2026-03-27T12:00:00Z'), 4))).toEqual([
      '2026-03-28T01:30:00.000Z', // 02:30 CET
      '2026-03-29T01:00:00.000Z', // 02:30 does not exist: 03:00 CEST
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-31T00:30:00.000Z',
    ]);
  });

  it('Europe/Berlin, fall back (03:00 -> 02:00 on 2026-10-25): 02:30 fires once, hourly stays hourly', () => {
    expect(iso(cronTicks('30 2 * * *', 'Europe/Berlin', at('2026-10-23T12:00:00Z'), 3))).toEqual([
      '2026-10-24T00:30:00.000Z',
      '2026-10-25T00:30:00.000Z', // the first 02:30 only
      '2026-10-26T01:30:00.000Z',
    ]);
    expect(iso(cronTicks('0 * * * *', 'Europe/Berlin', at('2026-10-24T23:30:00Z'), 4))).toEqual([
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T02:00:00.000Z',
      '2026-10-25T03:00:00.000Z',
    ]);
  });

  it('America/New_York, spring forward (2026-03-08) and fall back (2026-11-01)', () => {
    expect(iso(cronTicks('0 9 * * *', 'America/New_York', at('2026-03-07T00:00:00Z'), 3))).toEqual([
      '2026-03-07T14:00:00.000Z', // 09:00 EST
      '2026-03-08T13:00:00.000Z', // 09:00 EDT
      '2026-03-09T13:00:00.000Z',
    ]);
    expect(iso(cronTicks('30 1 * * *', 'America/New_York', at('2026-10-30T12:00:00Z'), 3))).toEqual(
      [
        '2026-10-31T05:30:00.000Z', // 01:30 EDT
        '2026-11-01T05:30:00.000Z', // 01:30 happens twice: fires at the first only
        '2026-11-02T06:30:00.000Z', // 01:30 EST
      ],
    );
  });

  it('6 fields: seconds first; default time zone UTC', () => {
    expect(iso(cronTicks('*/15 * * * * *', undefined, at('2026-01-01T00:00:07.500Z'), 3))).toEqual([
      '2026-01-01T00:00:15.000Z',
      '2026-01-01T00:00:30.000Z',
      '2026-01-01T00:00:45.000Z',
    ]);
  });
});

describe('nextTicks', () => {
  const every = (n: number, more: Partial<StoredDef> = {}): StoredDef => ({
    every: n,
    missed: 'once',
    missedAfterMs: 1000,
    ...more,
  });

  it('every: aligned on the anchor, strictly after the last tick made, up to the horizon', () => {
    const now = 10_000;
    const { ticks, ended } = nextTicks(every(300), { a: 1_000, c: 0 }, now);
    expect(ticks[0]).toBe(10_300);
    expect(ticks.every((t, i) => t === 10_300 + 300 * i)).toBe(true);
    expect(ticks.at(-1)!).toBeLessThanOrEqual(now + HORIZON_MS);
    expect(ended).toBe(false);
    // After a made tick in the future, from there on.
    expect(nextTicks(every(300), { a: 1_000, t: 12_100, c: 7 }, now).ticks[0]).toBe(12_400);
    // Ticks nobody made when they came due: those more than missedAfterMs ago are not made;
    // those since are (late, they fire at once): from now - missedAfterMs on.
    expect(nextTicks(every(300), { a: 1_000, t: 4_000, c: 7 }, now).ticks[0]).toBe(9_100);
    expect(
      nextTicks(every(300, { missedAfterMs: 100 }), { a: 1_000, t: 4_000, c: 7 }, now).ticks[0],
    ).toBe(10_000);
    // A schedule that made none yet (new, or changed) starts after now.
    expect(nextTicks(every(300), { a: 1_000, c: 0 }, now).ticks[0]).toBe(10_300);
  });

  it('at least one tick, even beyond the horizon', () => {
    const r = nextTicks(every(3_600_000), { a: 0, c: 0 }, 10);
    expect(r).toEqual({ ticks: [3_600_000], ended: false });
  });

  it('limit and endAt end the schedule', () => {
    expect(nextTicks(every(100, { limit: 5 }), { a: 0, t: 200, c: 3 }, 250)).toEqual({
      ticks: [300, 400],
      ended: true,
    });
    expect(nextTicks(every(100, { endAt: 450 }), { a: 0, c: 0 }, 150)).toEqual({
      ticks: [200, 300, 400],
      ended: true,
    });
  });

  it('cron: startAt is inclusive', () => {
    const def: StoredDef = { cron: '* * * * * *', missed: 'once', missedAfterMs: 1000 };
    const spec = { ...def, startAt: 5_000, endAt: 7_000 };
    expect(nextTicks(spec, { a: 0, c: 0 }, 1_000)).toEqual({ ticks: [5_000], ended: false });
    expect(nextTicks(spec, { a: 0, c: 0 }, 5_500)).toEqual({ ticks: [6_000, 7_000], ended: true });
  });
});

describe('horizonOf', () => {
  it('2 s, or three default clean intervals when those are longer', () => {
    expect(horizonOf(resolveQueueOptions('q', {}))).toBe(2000);
    expect(
      horizonOf(resolveQueueOptions('q', { heartbeatTimeoutMs: 60_000, leaseMs: 60_000 })),
    ).toBe(15_000);
  });
});
