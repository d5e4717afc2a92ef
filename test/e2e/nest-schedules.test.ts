// Declared schedules (registerQueue({ schedules, pruneSchedules })): three app instances share a
// queue and every tick is processed once; a changed declaration takes effect on restart;
// undeclared schedules are pruned only on request. Bad declarations, which fail the bootstrap,
// are nest-schedules-bootstrap.test.ts.
import { describe, expect, it } from '@jest/globals';
import { uniqueName } from '../support/keys.js';
import { waitFor } from '../support/wait.js';
import {
  contiguous,
  QUEUE,
  scheduleInstances,
  timesEach,
  type Seen,
} from './nest-schedules-instances.js';

const { inspector, startInstance, stop } = scheduleInstances();

describe('declared schedules', () => {
  it('three instances: every tick is processed exactly once, none early', async () => {
    const prefix = inspector.track(uniqueName('sch'));
    const seen: Seen[] = [];
    // missedAfterMs: lateness on a loaded machine must not drop a tick here (the missed policy
    // has tests of its own in the core).
    const registration = {
      schedules: [{ id: 'tick', every: 200, missedAfterMs: 60_000, data: { v: 1 } }],
    };
    const instances = [];
    // Each job works 300 ms, ticks come every 200 ms: one instance alone cannot keep up, so the
    // ticks spread over the three.
    for (const name of ['a', 'b', 'c']) {
      instances.push(await startInstance(name, prefix, registration, seen, { workMs: 300 }));
    }
    // Upserted by each instance; only the first one wrote anything.
    const logs = instances.map((i) => i.logger.entries);
    expect(logs[0]).toContainEqual({
      level: 'log',
      message: `queue "${QUEUE}": schedule "tick" created`,
    });
    for (const l of logs.slice(1)) {
      expect(l).toContainEqual({
        level: 'debug',
        message: `queue "${QUEUE}": schedule "tick" unchanged`,
      });
      expect(l.filter((e) => e.message.includes('created'))).toEqual([]);
    }
    // About 3 s of ticks, then every tick up to the last one seen.
    await waitFor(() => seen.length >= 15, { timeoutMs: 15_000, what: '15 ticks processed' });
    await waitFor(() => contiguous(seen, 200), { timeoutMs: 5_000, what: 'no tick left out' });
    await Promise.all(instances.map((i) => stop(i.app)));

    expect(seen.length).toBeGreaterThanOrEqual(15);
    for (const s of seen) {
      expect(s.id).toMatch(/^tick:\d+$/);
      expect(s.data).toEqual({ v: 1 });
      expect(s.at).toBeGreaterThanOrEqual(s.tick); // never before the tick (Redis time, same host)
    }
    const dupes = [...timesEach(seen)].filter(([, n]) => n !== 1);
    expect(dupes).toEqual([]);
    expect(contiguous(seen, 200)).toBe(true);
    expect(new Set(seen.map((s) => s.instance)).size).toBeGreaterThan(1);
    const info = await inspector.queue(QUEUE, prefix).getSchedule('tick');
    expect(info).toMatchObject({
      spec: { every: 200 },
      template: { data: { v: 1 } },
      ended: false,
    });
    expect(info?.lastFireAt).toBeGreaterThanOrEqual(Math.max(...seen.map((s) => s.tick)));
  }, 30_000);

  it('a changed declaration takes effect when an instance restarts with it', async () => {
    const prefix = inspector.track(uniqueName('sch'));
    const seen: Seen[] = [];
    const v1 = { schedules: [{ id: 'tick', every: 200, missedAfterMs: 60_000, data: { v: 1 } }] };
    const v2 = { schedules: [{ id: 'tick', every: 300, missedAfterMs: 60_000, data: { v: 2 } }] };
    await startInstance('a', prefix, v1, seen);
    const b = await startInstance('b', prefix, v1, seen);
    await waitFor(() => seen.length >= 3, { timeoutMs: 10_000, what: '3 ticks of v1' });
    await stop(b.app);

    const restarted = await startInstance('b2', prefix, v2, seen);
    expect(restarted.logger.entries).toContainEqual({
      level: 'log',
      message: `queue "${QUEUE}": schedule "tick" updated`,
    });
    const isV2 = (s: Seen) => (s.data as { v: number }).v === 2;
    await waitFor(() => seen.filter(isV2).length >= 4, {
      timeoutMs: 10_000,
      what: '4 ticks of v2',
    });
    // Instance a, still running with the old declaration, does not bring it back.
    const info = await inspector.queue(QUEUE, prefix).getSchedule('tick');
    expect(info).toMatchObject({ spec: { every: 300 }, template: { data: { v: 2 } } });
    const newer = seen.filter(isV2);
    const older = seen.filter((s) => !isV2(s));
    expect(Math.max(...older.map((s) => s.tick))).toBeLessThan(
      Math.min(...newer.map((s) => s.tick)),
    );
    await waitFor(() => contiguous(newer, 300), { what: 'v2 ticks 300 ms apart' });
    expect([...timesEach(seen).values()].every((n) => n === 1)).toBe(true);
  }, 30_000);

  it('keeps undeclared schedules unless pruneSchedules is true', async () => {
    const prefix = inspector.track(uniqueName('sch'));
    const queue = inspector.queue(QUEUE, prefix);
    await queue.upsertSchedule('legacy', { every: 3_600_000 }, { data: { old: true } });
    const declared = { id: 'tick', every: 60_000, data: { v: 1 } };
    const ids = async () => (await queue.listSchedules()).map((s) => s.id);

    const a = await startInstance('a', prefix, { schedules: [declared] }, []);
    expect(await ids()).toEqual(['legacy', 'tick']);
    await stop(a.app);
    const b = await startInstance(
      'b',
      prefix,
      { schedules: [declared], pruneSchedules: false },
      [],
    );
    expect(await ids()).toEqual(['legacy', 'tick']);
    await stop(b.app);

    const c = await startInstance('c', prefix, { schedules: [declared], pruneSchedules: true }, []);
    expect(await ids()).toEqual(['tick']);
    expect(c.logger.messages('log')).toContain(
      `queue "${QUEUE}": schedule "legacy" removed (in Redis but not declared; pruneSchedules is on)`,
    );
    await stop(c.app);
    // Declaring none with pruneSchedules: true removes them all.
    await startInstance('d', prefix, { schedules: [], pruneSchedules: true }, []);
    expect(await ids()).toEqual([]);
  }, 30_000);

  it('warns when schedules are declared but the cleaner (which makes their ticks) is off', async () => {
    const prefix = inspector.track(uniqueName('sch'));
    const { logger } = await startInstance(
      'a',
      prefix,
      { schedules: [{ id: 'tick', every: 60_000, data: 1 }] },
      [],
      { cleaner: false },
    );
    expect(logger.messages('warn')).toContainEqual(
      expect.stringMatching(/^schedules are declared \(queues "ticks"\) but the cleaner is off/),
    );
  });
});
