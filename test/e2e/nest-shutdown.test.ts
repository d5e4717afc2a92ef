import { createServer, type AddressInfo } from 'node:net';
import { afterAll, describe, expect, it, jest } from '@jest/globals';
import { Module, type INestApplication, type Type } from '@nestjs/common';
import {
  getQueueToken,
  OnQueueEvent,
  Process,
  Processor,
  WorkQueueCleaner,
  WorkQueueModule,
  type Job,
  type WorkQueue,
  type WorkQueueModuleOptions,
  QueueEventsListener,
} from '../../src/index.js';
import { Worker } from '../../lib/index.js';
import { WorkQueueQueueEvents } from '../../src/work-queue.queue-events.js';
import { testRedisUrl, uniqueName } from '../support/keys.js';
import { activeResources, createNestApp, Inspector, MemoryLogger } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

/** A port nothing listens on (connections to it are refused at once). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

const inspector = new Inspector();
afterAll(() => inspector.close());

async function createApp(
  providers: Type[],
  options: Partial<WorkQueueModuleOptions> = {},
): Promise<{ app: INestApplication; prefix: string; logger: MemoryLogger }> {
  const prefix = inspector.track(uniqueName('t'));
  const logger = new MemoryLogger();
  @Module({
    imports: [
      WorkQueueModule.forRoot({
        connection: { url: testRedisUrl() },
        prefix,
        logger,
        ...options,
      } as WorkQueueModuleOptions),
      WorkQueueModule.registerQueue({ name: 'work' }),
    ],
    providers,
  })
  class AppModule {}
  return { app: await createNestApp({ imports: [AppModule] }), prefix, logger };
}

describe('graceful shutdown', () => {
  it('app.close() waits for a running handler that finishes within shutdownTimeoutMs', async () => {
    const events: string[] = [];
    @Processor('work')
    class SlowProcessor {
      @Process()
      async handle(job: Job) {
        events.push(`start ${job.id}`);
        await new Promise((r) => setTimeout(r, 400));
        events.push(`end ${job.id} aborted=${job.signal.aborted}`);
      }
    }
    const { app, prefix } = await createApp([SlowProcessor], { shutdownTimeoutMs: 5_000 });
    await app.init();
    const queue = app.get<WorkQueue>(getQueueToken('work'));
    const { id } = await queue.add({ n: 1 });
    await waitFor(() => events.length === 1);
    await app.close();
    events.push('closed');
    expect(events).toEqual([`start ${id}`, `end ${id} aborted=false`, 'closed']);

    const check = inspector.queue('work', prefix);
    expect(await check.getJob(id)).toMatchObject({ state: 'completed' });
    expect(await check.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0, workers: 0 });
  });

  it('a handler still running after shutdownTimeoutMs is released to the front: nothing is lost', async () => {
    const started: string[] = [];
    const aborted: string[] = [];
    @Processor('work', { concurrency: 1 })
    class StuckProcessor {
      @Process()
      async handle(job: Job) {
        started.push(job.id);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 3_000);
          job.signal.addEventListener('abort', () => {
            aborted.push(job.id);
            clearTimeout(t);
            resolve();
          });
        });
      }
    }
    const { app, prefix } = await createApp([StuckProcessor], { shutdownTimeoutMs: 100 });
    await app.init();
    const queue = app.get<WorkQueue>(getQueueToken('work'));
    const first = await queue.add({ n: 1 });
    await waitFor(() => started.length === 1);
    const second = await queue.add({ n: 2 }); // waits behind the running one (concurrency 1)
    const t0 = Date.now();
    await app.close();
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(started).toEqual([first.id]);
    expect(aborted).toEqual([first.id]);

    // A fresh queue on the same prefix: both jobs wait, the released one first, no attempt counted.
    const check = inspector.queue('work', prefix);
    expect(await check.counts()).toMatchObject({ pending: 2, leased: 0, dead: 0, workers: 0 });
    expect(await check.getJob(first.id)).toMatchObject({ state: 'pending', attemptsMade: 0 });
    const [next] = await check.lease();
    expect(next!.id).toBe(first.id);
    expect(await check.complete(next!)).toBe(true);
    expect(second.id).not.toBe(first.id);
  });

  it('leaves no timer, socket or thread behind after app.close()', async () => {
    const seen: string[] = [];
    @Processor('work', { concurrency: 4 })
    class QuickProcessor {
      @Process()
      handle(job: Job) {
        seen.push(job.id);
      }
    }
    // Warm up the lazy modules first, so the baseline does not miss their one-off resources.
    await inspector.client.ping();
    const baseline = activeResources();
    const { app } = await createApp([QuickProcessor], { cleaner: { intervalMs: 50 } });
    await app.init();
    const queue = app.get<WorkQueue>(getQueueToken('work'));
    await queue.addBulk([{ data: 1 }, { data: 2 }, { data: 3 }]);
    await waitFor(() => seen.length === 3);
    await new Promise((r) => setTimeout(r, 120)); // let the cleaner tick at least once
    const during = activeResources();
    expect(during.TCPSocketWrap ?? 0).toBeGreaterThan(baseline.TCPSocketWrap ?? 0);
    // Unref'd timers are not listed as active resources: look at the cleaner itself.
    const cleaner = app.get(WorkQueueCleaner);
    expect(cleaner.intervalMs).toBe(50);
    await app.close();
    expect(cleaner.intervalMs).toBe(0);
    // Sockets finish closing on the next turns of the event loop. Nothing may stay above the
    // baseline; below it is fine (timers of earlier tests that were pending at the baseline
    // may have fired meanwhile).
    const above = () => {
      const now = activeResources();
      return Object.fromEntries(
        Object.entries(now).filter(([type, n]) => n > (baseline[type] ?? 0)),
      );
    };
    await waitFor(() => Object.keys(above()).length === 0, {
      timeoutMs: 3_000,
      what: `resources back to ${JSON.stringify(baseline)}, now ${JSON.stringify(activeResources())}`,
    }).catch(() => undefined);
    expect(above()).toEqual({});
  });

  it('app.close() during app.init(): nothing starts after it (no worker, event reader or cleaner left)', async () => {
    @Processor('work')
    class P {
      @Process()
      handle() {}
    }
    @QueueEventsListener('work')
    class L {
      @OnQueueEvent('completed')
      completed() {}
    }
    const { app, prefix } = await createApp([P, L], { cleaner: { intervalMs: 50 } });
    const init = app.init().then(
      () => 'initialised',
      (e: unknown) => e,
    );
    await app.close();
    await init;
    expect(app.get(WorkQueueQueueEvents).openReaders).toBe(0);
    expect(app.get(WorkQueueCleaner).intervalMs).toBe(0);
    expect((await inspector.queue('work', prefix).counts()).workers).toBe(0);
  });

  it('a bootstrap failed on an unreachable Redis: app.close() ends its connections, no timer or socket left', async () => {
    @Processor('work')
    class P {
      @Process()
      handle() {}
    }
    await inspector.client.ping();
    const baseline = activeResources();
    const { app } = await createApp([P], {
      connection: { url: `redis://127.0.0.1:${await closedPort()}` },
      cleaner: { intervalMs: 50 },
    });
    await expect(app.init()).rejects.toMatchObject({ code: 'REDIS_UNAVAILABLE' });
    const client = app.get<WorkQueue>(getQueueToken('work')).client;
    await app.close();
    // Disconnected while it waited to reconnect, an ioredis client stayed 'reconnecting' for
    // good (ioredis#1247), its commands unanswered (their bounded waits held the process up to
    // 5 s) and a 2 s timer armed on its closed socket.
    // (A connect attempt cut by the close ends on the next turns of the event loop.)
    const above = () =>
      Object.entries(activeResources()).filter(([type, n]) => n > (baseline[type] ?? 0));
    await waitFor(() => client.status === 'end' && above().length === 0, {
      timeoutMs: 1_500,
      what: `the client ended and resources back to ${JSON.stringify(baseline)}`,
    }).catch(() => undefined);
    expect(client.status).toBe('end');
    expect(above()).toEqual([]);
  });

  it('warns at bootstrap when shutdown hooks look missing, not when they are enabled', async () => {
    @Processor('work')
    class P {
      @Process()
      handle() {}
    }
    const warning = expect.stringContaining('call app.enableShutdownHooks()');
    const before = process.listenerCount('SIGTERM');

    const without = await createApp([P]);
    await without.app.init();
    await without.app.close();
    if (before === 0) expect(without.logger.messages('warn')).toContainEqual(warning);

    const withHooks = await createApp([P]);
    withHooks.app.enableShutdownHooks();
    await withHooks.app.init();
    await withHooks.app.close();
    expect(withHooks.logger.messages('warn')).not.toContainEqual(warning);
    expect(process.listenerCount('SIGTERM')).toBe(before);

    // A standalone app (NestFactory.createApplicationContext) is bootstrapped before its caller
    // can enable them: enabled right after, no warning.
    const after = await createApp([P]);
    await after.app.init();
    after.app.enableShutdownHooks();
    await after.app.close();
    expect(after.logger.messages('warn')).not.toContainEqual(warning);
    expect(process.listenerCount('SIGTERM')).toBe(before);

    // A worker that takes longer than the check's second to start (a sandbox booting, a slow
    // Redis): the second counts from when the workers run, not from the bootstrap's start.
    const slow = await createApp([P]);
    const start = Worker.prototype.start;
    const spy = jest.spyOn(Worker.prototype, 'start').mockImplementation(function (this: Worker) {
      return new Promise((r) => setTimeout(r, 1_500)).then(() => start.call(this));
    });
    try {
      await slow.app.init();
    } finally {
      spy.mockRestore();
    }
    slow.app.enableShutdownHooks();
    await slow.app.close();
    expect(slow.logger.messages('warn')).not.toContainEqual(warning);
    expect(process.listenerCount('SIGTERM')).toBe(before);
  });
});
