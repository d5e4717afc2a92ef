// Declared schedules (registerQueue({ schedules, pruneSchedules })): three app instances share a
// queue and every tick is processed once; a changed declaration takes effect on restart;
// undeclared schedules are pruned only on request; bad declarations fail the bootstrap.
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { Module, type INestApplication } from '@nestjs/common';
import {
  Process,
  Processor,
  WorkQueueError,
  WorkQueueModule,
  type Job,
  type RegisterQueueOptions,
  type WorkQueueModuleOptions,
} from '../../src/index.js';
import { testRedisUrl, uniqueName } from '../support/keys.js';
import { createNestApp, Inspector, MemoryLogger } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

const QUEUE = 'ticks';

interface Seen {
  id: string;
  /** The tick's time, from its id `<schedule>:<tick ms>`. */
  tick: number;
  data: unknown;
  instance: string;
  /** When the handler started. */
  at: number;
}

const inspector = new Inspector();
const running = new Set<INestApplication>();
afterEach(async () => {
  await Promise.all([...running].map((a) => stop(a)));
});
afterAll(() => inspector.close());

async function stop(app: INestApplication): Promise<void> {
  running.delete(app);
  await app.close();
}

/** One app instance: the queue with `registration`, and a processor recording into `seen`. */
async function startInstance(
  instance: string,
  prefix: string,
  registration: Omit<RegisterQueueOptions, 'name'>,
  seen: Seen[],
  {
    connection = { url: testRedisUrl() } as WorkQueueModuleOptions['connection'],
    logger = new MemoryLogger(),
    processor = true,
    cleaner = {} as WorkQueueModuleOptions['cleaner'],
    /** How long each job works (simulated), so that one worker alone cannot keep up. */
    workMs = 0,
  } = {},
) {
  @Processor(QUEUE)
  class TickProcessor {
    @Process()
    async tick(job: Job) {
      const at = Date.now();
      if (workMs > 0) await new Promise((r) => setTimeout(r, workMs));
      seen.push({
        id: job.id,
        tick: Number(job.id.split(':').pop()),
        data: job.data,
        instance,
        at,
      });
    }
  }
  @Module({
    imports: [
      WorkQueueModule.forRoot({ connection, prefix, logger, cleaner }),
      WorkQueueModule.registerQueue({ name: QUEUE, ...registration }),
    ],
    providers: processor ? [TickProcessor] : [],
  })
  class AppModule {}
  const app = await createNestApp({ imports: [AppModule] });
  running.add(app); // closed after the test even if init fails
  await app.init();
  return { app, logger };
}

/** The ticks from the first seen to the last seen, each one seen. */
function contiguous(seen: readonly Seen[], every: number): boolean {
  const ticks = new Set(seen.map((s) => s.tick));
  const sorted = [...ticks].sort((a, b) => a - b);
  return sorted.every((t, i) => i === 0 || t - sorted[i - 1]! === every);
}

function timesEach(seen: readonly Seen[]): Map<string, number> {
  const n = new Map<string, number>();
  for (const s of seen) n.set(s.id, (n.get(s.id) ?? 0) + 1);
  return n;
}

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

  it('fails the bootstrap on bad declarations, listing every problem, writing nothing', async () => {
    const prefix = inspector.track(uniqueName('sch'));
    const bad = {
      schedules: [
        { id: 'a', every: 0, data: 1 },
        { id: 'b', cron: 'not a cron', tz: 'Mars/Olympus_Mons', data: 1 },
        { id: 'a', every: 100, data: 1, pattern: '* * * * *' },
        { id: 'c', every: 100, startAt: 2_000, endAt: 1_000, priority: 12 },
      ],
      pruneSchedules: 'yes',
    } as unknown as Omit<RegisterQueueOptions, 'name'>;
    const error = await startInstance('a', prefix, bad, []).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WorkQueueError);
    expect(error).toMatchObject({ code: 'INVALID_OPTIONS' });
    const problems = (error as WorkQueueError).problems;
    expect(problems).toEqual([
      'pruneSchedules must be a boolean, got "yes"',
      'schedules[0] ("a"): every must be a positive integer (ms) up to 1e12, got 0',
      'schedules[1] ("b"): tz "Mars/Olympus_Mons" is not a known IANA time zone',
      expect.stringMatching(/^schedules\[1\] \("b"\): cron "not a cron" /),
      expect.stringMatching(
        /^schedules\[2\] \("a"\): pattern is not a known option \(BullMQ's pattern is `cron` here\)/,
      ),
      'schedules[2] ("a"): the same id as schedules[0]; schedule ids are unique per queue',
      'schedules[3] ("c"): endAt is before startAt',
      'schedules[3] ("c"): data is missing',
      'schedules[3] ("c"): priority must be an integer 0 (highest)..9 (lowest), got 12',
    ]);
    expect((error as Error).message).toMatch(
      /^invalid options in WorkQueueModule\.registerQueue\("ticks"\):\n {2}- /,
    );
    expect(await inspector.queue(QUEUE, prefix).listSchedules()).toEqual([]);
  });

  it('checks the declarations of registerQueueAsync too', async () => {
    const prefix = inspector.track(uniqueName('sch'));
    @Module({
      imports: [
        WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, prefix, logger: false }),
        WorkQueueModule.registerQueueAsync({
          name: QUEUE,
          useFactory: async () => ({ schedules: [{ id: 'x', cron: '* * *', data: null }] }),
        }),
      ],
    })
    class AppModule {}
    const error = await createNestApp({ imports: [AppModule] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      code: 'INVALID_OPTIONS',
      problems: [
        `schedules[0] ("x"): cron "* * *" has 3 fields; give 5 (minute first) or 6 (second first)`,
      ],
    });
  });

  it('fails the bootstrap with a clear error when Redis does not answer', async () => {
    const started = Date.now();
    const error = await startInstance(
      'a',
      uniqueName('sch'),
      { commandTimeoutMs: 300, schedules: [{ id: 'tick', every: 1_000, data: 1 }] },
      [],
      { connection: { url: 'redis://127.0.0.1:1' }, processor: false },
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toMatchObject({
      code: 'REDIS_UNAVAILABLE',
      problems: [expect.stringMatching(/^schedule "tick": /)],
    });
    expect((error as Error).message).toMatch(
      new RegExp(
        `^queue "${QUEUE}": its declared schedules could not be applied:\\n  - schedule "tick": `,
      ),
    );
  });
});
