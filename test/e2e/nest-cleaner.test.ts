import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { Module, type Type } from '@nestjs/common';
import {
  getQueueToken,
  Process,
  Processor,
  WorkQueueCleaner,
  WorkQueueModule,
  type Job,
  type WorkQueue,
  type WorkQueueCleanerOptions,
} from '../../src/index.js';
import { testRedisUrl, uniqueName } from '../support/keys.js';
import { getFreePort } from '../support/redis-server.js';
import { Inspector, MemoryLogger, nestAppsClosedAfterEach } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

const inspector = new Inspector();
const startApp = nestAppsClosedAfterEach();
afterAll(() => inspector.close());

async function start(
  prefix: string,
  cleaner: WorkQueueCleanerOptions,
  providers: Type[] = [],
  logger = new MemoryLogger(),
) {
  @Module({
    imports: [
      WorkQueueModule.forRoot({
        connection: { url: testRedisUrl() },
        prefix,
        logger,
        cleaner,
        defaults: { heartbeatTimeoutMs: 300 },
      }),
      WorkQueueModule.registerQueue({ name: 'work' }),
    ],
    providers,
  })
  class AppModule {}
  const app = await startApp({ imports: [AppModule] });
  return {
    app,
    logger,
    queue: app.get<WorkQueue>(getQueueToken('work')),
    cleaner: app.get(WorkQueueCleaner),
  };
}

describe('WorkQueueCleaner', () => {
  it("reclaims a dead worker's jobs long before their leases expire", async () => {
    const prefix = inspector.track(uniqueName('t'));
    const check = inspector.queue('work', prefix);
    // A worker that leases a job for a minute, then dies (never heartbeats again).
    const deadWorker = await check.registerWorker();
    const { id } = await check.add({ n: 1 });
    const [lease] = await check.lease({ workerId: deadWorker, leaseMs: 60_000 });
    expect(lease!.id).toBe(id);

    const seen: string[] = [];
    @Processor('work')
    class WorkProcessor {
      @Process()
      handle(job: Job) {
        seen.push(`${job.id}#${job.attempt}`);
      }
    }
    const t0 = Date.now();
    const { logger } = await start(prefix, { intervalMs: 100 }, [WorkProcessor]);
    await waitFor(() => seen.length === 1, { timeoutMs: 5_000, what: 'the reclaimed job' });
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(seen).toEqual([`${id}#1`]); // a lease expiry is not a failed attempt
    expect(logger.messages('debug')).toContainEqual(
      expect.stringMatching(/^cleaner: queue "work": .*deadWorkers 1, reclaimedFromWorkers 1/),
    );
    expect(await check.complete(lease!)).toBe(false); // the dead worker's late complete loses
  });

  it('the default interval is a quarter of min(heartbeatTimeoutMs, leaseMs), within 100..5 000 ms; cleaner: false disables it', async () => {
    const prefix = inspector.track(uniqueName('t'));
    const on = await start(prefix, {});
    expect(on.cleaner.intervalMs).toBe(100); // heartbeatTimeoutMs 300 / 4 = 75, at least 100
    const off = await start(prefix, false);
    expect(off.cleaner.intervalMs).toBe(0);
    const spy = jest.spyOn(off.queue, 'clean');
    await new Promise((r) => setTimeout(r, 400));
    expect(spy).not.toHaveBeenCalled();
  });

  it('two app instances clean a queue once per interval, through the guard key', async () => {
    const prefix = inspector.track(uniqueName('t'));
    // Long interval: only explicit rounds run.
    const a = await start(prefix, { intervalMs: 60_000 });
    const b = await start(prefix, { intervalMs: 60_000 });
    expect(await a.cleaner.runOnce()).toEqual([
      expect.objectContaining({ queue: 'work', ran: true }),
    ]);
    expect(await b.cleaner.runOnce()).toEqual([{ queue: 'work', ran: false }]);
    expect(await a.cleaner.runOnce()).toEqual([{ queue: 'work', ran: false }]);
    // The guard key carries the queue's hash tag and names the instance that cleaned.
    expect(await inspector.client.get(`${prefix}:{work}:cleaner`)).toBe(a.cleaner.instanceId);
    expect(a.queue.keys.cleanGuard).toBe(`${prefix}:{work}:cleaner`);
  });

  it('with timers running, the instances together clean about once per interval', async () => {
    const prefix = inspector.track(uniqueName('t'));
    const interval = 200;
    const a = await start(prefix, { intervalMs: interval });
    const b = await start(prefix, { intervalMs: interval });
    const spies = [jest.spyOn(a.queue, 'clean'), jest.spyOn(b.queue, 'clean')];
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, 2_000));
    const elapsed = Date.now() - t0;
    const [byA, byB] = spies.map((s) => s.mock.calls.length) as [number, number];
    const total = byA + byB;
    // The guard lives interval - interval/10, so rounds are at least that far apart.
    expect(total).toBeLessThanOrEqual(Math.floor(elapsed / (interval * 0.9)) + 1);
    expect(total).toBeGreaterThanOrEqual(Math.floor(elapsed / interval / 2));
  });

  it('a queue whose Redis does not answer holds up no other queue; its round cut by the shutdown is not logged', async () => {
    // (A round cleaned the queues one after another: a queue on a connection that was down
    // held every other queue's clean for its commandTimeoutMs, round after round.)
    const prefix = inspector.track(uniqueName('t'));
    const check = inspector.queue('work', prefix);
    const { id } = await check.add({ n: 1 }, { delayMs: 100 });
    const logger = new MemoryLogger();
    @Module({
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: testRedisUrl() },
          connections: {
            // Commands wait for the connection up to the queue's commandTimeoutMs (a minute).
            down: {
              redis: { host: '127.0.0.1', port: await getFreePort(), maxRetriesPerRequest: null },
            },
          },
          prefix,
          logger,
          cleaner: { intervalMs: 50 },
        }),
        WorkQueueModule.registerQueue(
          { name: 'stuck', configKey: 'down', commandTimeoutMs: 60_000 },
          { name: 'work' },
        ),
      ],
    })
    class TwoConnections {}
    const app = await startApp({ imports: [TwoConnections] });
    await waitFor(async () => (await check.getJob(id))?.state === 'pending', {
      timeoutMs: 15_000,
      what: 'the due job promoted while the other queue waits for its Redis',
    });
    // The stuck queue's round fails when app.close() closes its connection: no "will retry
    // next round" then.
    await app.close();
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
    expect(logger.messages('warn').filter((m) => m.startsWith('cleaner:'))).toEqual([]);
  });

  it('a failing round is logged and the timer lives on', async () => {
    const prefix = inspector.track(uniqueName('t'));
    const { queue, logger } = await start(prefix, { intervalMs: 50 });
    const clean = jest
      .spyOn(queue, 'clean')
      .mockRejectedValueOnce(new Error('boom 1'))
      .mockRejectedValueOnce(new Error('boom 2'));
    await waitFor(() => clean.mock.calls.length >= 4, { what: 'rounds after the failures' });
    expect(logger.messages('warn')).toEqual(
      expect.arrayContaining([
        'cleaner: queue "work": boom 1 (will retry next round)',
        'cleaner: queue "work": boom 2 (will retry next round)',
      ]),
    );
    expect(clean.mock.results.slice(2).every((r) => r.type === 'return')).toBe(true);
  });
});
