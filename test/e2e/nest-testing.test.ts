// WorkQueueTestingModule (nestjs-work-queue/testing): WorkQueueModule.forRoot() for tests — a
// prefix per app, quick timeouts, the keys removed on close — with whenIdle.
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { Injectable, type DynamicModule, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  getQueueToken,
  Process,
  Processor,
  WorkQueueCleaner,
  WorkQueueContext,
  WorkQueueError,
  WorkQueueModule,
  type Job,
  type WorkQueue,
} from '../../src/index.js';
import {
  removeKeys,
  uniquePrefix,
  whenIdle,
  WorkQueueTestingModule,
} from '../../src/testing/index.js';
import { errorOf } from '../support/core.js';
import { keysMatching, testRedisUrl } from '../support/keys.js';
import { createNestApp } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

const redis = new Redis(testRedisUrl());
const apps: INestApplication[] = [];
const keptPrefixes: string[] = [];
const savedRedisUrl = process.env.REDIS_URL;
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
  if (savedRedisUrl === undefined) delete process.env.REDIS_URL;
  else process.env.REDIS_URL = savedRedisUrl;
});
afterAll(async () => {
  for (const p of keptPrefixes) await removeKeys(redis, p);
  redis.disconnect();
});

/** Runs what is added to 'work': job 'flaky' fails its first attempt. */
@Injectable()
@Processor('work')
class WorkProcessor {
  static runs: string[] = [];
  static hold: Promise<void> | undefined;

  @Process()
  async run(job: Job<{ n: number }>) {
    WorkProcessor.runs.push(`${job.name ?? '-'}:${job.data.n}:${job.attempt}`);
    if (job.name === 'flaky' && job.attempt === 1) throw new Error('first attempt fails');
    if (job.name === 'stuck') await WorkProcessor.hold;
  }
}

async function start(testing: DynamicModule, extra: DynamicModule[] = []) {
  const app = await createNestApp({
    imports: [testing, WorkQueueModule.registerQueue({ name: 'work' }), ...extra],
    providers: [WorkProcessor],
  });
  apps.push(app);
  await app.init();
  const context = app.get(WorkQueueContext);
  return { app, context, queue: app.get<WorkQueue<{ n: number }>>(getQueueToken('work')) };
}

const connection = () => ({ url: testRedisUrl() });

describe('WorkQueueTestingModule', () => {
  it('runs a processor; whenIdle resolves once every job, retry included, is done', async () => {
    WorkProcessor.runs = [];
    const { queue } = await start(WorkQueueTestingModule.forRoot({ connection: connection() }));
    await queue.add({ n: 1 });
    await queue.add({ n: 2 }, { name: 'flaky' });
    await queue.add({ n: 3 });
    const counts = await whenIdle(queue, { timeoutMs: 5_000 });
    expect(counts).toMatchObject({ pending: 0, delayed: 0, leased: 0, dead: 0 });
    expect([...WorkProcessor.runs].sort()).toEqual(['-:1:1', '-:3:1', 'flaky:2:1', 'flaky:2:2']);
  });

  it('sets a prefix per app, quick timeouts and the cleaner; given defaults merge over them', async () => {
    const testing = WorkQueueTestingModule.forRoot({
      connection: connection(),
      defaults: { leaseMs: 9_000 },
    });
    const a = await start(testing);
    const b = await start(testing); // the same module, compiled again: a prefix of its own
    expect(a.context.prefix).toMatch(/^test-[0-9a-f]{12}$/);
    expect(b.context.prefix).not.toBe(a.context.prefix);
    expect(a.queue.options).toMatchObject({
      prefix: a.context.prefix,
      leaseMs: 9_000,
      heartbeatTimeoutMs: 1_000,
      commandTimeoutMs: 2_000,
      backoff: { type: 'fixed', delayMs: 10 },
    });
    expect(a.context.shutdownTimeoutMs).toBe(1_000);
    expect(a.context.logger).toBeUndefined();
    expect(a.app.get(WorkQueueCleaner).intervalMs).toBe(100);
  });

  it("removes the app's keys when it closes, after its workers let go of their jobs", async () => {
    WorkProcessor.runs = [];
    let release!: () => void;
    WorkProcessor.hold = new Promise((r) => (release = r));
    const { app, context, queue } = await start(
      WorkQueueTestingModule.forRoot({ connection: connection() }),
    );
    await queue.add({ n: 1 }, { delayMs: 60_000 });
    await queue.add({ n: 2 }, { name: 'stuck' });
    const prefix = context.prefix;
    await waitFor(() => WorkProcessor.runs.length === 1, { what: 'the stuck job running' });
    expect((await keysMatching(redis, `${prefix}:*`)).length).toBeGreaterThan(3);
    // A handler still running at close: released after shutdownTimeoutMs (1 s), then removed.
    await app.close();
    apps.splice(apps.indexOf(app), 1);
    release();
    expect(WorkProcessor.runs).toEqual(['stuck:2:1']);
    expect(await keysMatching(redis, `${prefix}:*`)).toEqual([]);
  });

  it('keeps the keys of a prefix you give, unless removeKeys: true', async () => {
    const kept = uniquePrefix('given');
    const removed = uniquePrefix('given');
    keptPrefixes.push(kept, removed);
    for (const [prefix, removeKeys] of [
      [kept, undefined],
      [removed, true],
    ] as const) {
      const { app, queue } = await start(
        WorkQueueTestingModule.forRoot({ connection: connection(), prefix, removeKeys }),
      );
      await queue.add({ n: 1 }, { delayMs: 60_000 });
      await app.close();
      apps.splice(apps.indexOf(app), 1);
    }
    expect((await keysMatching(redis, `${kept}:*`)).length).toBeGreaterThan(0);
    expect(await keysMatching(redis, `${removed}:*`)).toEqual([]);
  });

  it('connects to REDIS_URL when no connection is given (read when the app is compiled)', async () => {
    const testing = WorkQueueTestingModule.forRoot();
    process.env.REDIS_URL = testRedisUrl();
    const { queue } = await start(testing);
    await queue.add({ n: 1 });
    expect(await whenIdle(queue, { timeoutMs: 5_000 })).toMatchObject({ pending: 0 });
  });

  it('bad input: no connection and no REDIS_URL, removeKeys not a boolean (INVALID_OPTIONS)', async () => {
    delete process.env.REDIS_URL;
    const e = await errorOf(start(WorkQueueTestingModule.forRoot()));
    expect(e).toBeInstanceOf(WorkQueueError);
    expect((e as WorkQueueError).code).toBe('INVALID_OPTIONS');
    expect((e as WorkQueueError).problems).toEqual([
      'no connection: pass { connection: { url } } (startTestRedis() gives one) or set REDIS_URL',
    ]);
    const bad = await errorOf(() => WorkQueueTestingModule.forRoot({ removeKeys: 'yes' as never }));
    expect((bad as WorkQueueError).code).toBe('INVALID_OPTIONS');
    expect((bad as WorkQueueError).problems).toEqual(['removeKeys must be a boolean, got "yes"']);
    // Every problem at once (removeKeys was thrown alone, the module's options unchecked).
    const many = await errorOf(() =>
      WorkQueueTestingModule.forRoot({
        removeKeys: 'yes' as never,
        prefix: 'a b',
        shutdownTimeoutMs: -1,
      }),
    );
    expect((many as WorkQueueError).problems).toEqual([
      'removeKeys must be a boolean, got "yes"',
      expect.stringContaining('prefix'),
      expect.stringContaining('shutdownTimeoutMs'),
    ]);
    // What forRoot() refuses, this refuses: null and wrong-typed values are not "missing" (they
    // took the testing defaults; a null prefix then left its keys behind).
    const nulls = await errorOf(() =>
      WorkQueueTestingModule.forRoot({
        prefix: null,
        shutdownTimeoutMs: null,
        cleaner: null,
        defaults: 5,
      } as never),
    );
    expect((nulls as WorkQueueError).code).toBe('INVALID_OPTIONS');
    expect((nulls as WorkQueueError).problems).toEqual([
      expect.stringContaining('prefix'),
      'defaults must be an object, got 5',
      'shutdownTimeoutMs must be an integer >= 0, got null',
      'cleaner must be false or { intervalMs? }, got null',
    ]);
    // Not an object at all (it was a TypeError).
    for (const options of [null, [], 'x']) {
      const notObject = await errorOf(() => WorkQueueTestingModule.forRoot(options as never));
      expect((notObject as WorkQueueError).code).toBe('INVALID_OPTIONS');
      expect((notObject as WorkQueueError).problems).toEqual([
        expect.stringMatching(/^options must be an object, got /),
      ]);
    }
  });

  it('a queue overridden (overrideProvider) while its processor stays: the error says it was overridden, not that it is not registered', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        WorkQueueTestingModule.forRoot({ connection: connection() }),
        WorkQueueModule.registerQueue({ name: 'work' }),
      ],
      providers: [WorkProcessor],
    })
      .overrideProvider(getQueueToken('work'))
      .useValue({ add: () => Promise.resolve({ id: 'x', added: true }) })
      .compile();
    const e = await errorOf(moduleRef.init());
    await moduleRef.close();
    expect((e as WorkQueueError).code).toBe('INVALID_OPTIONS');
    expect((e as WorkQueueError).problems).toEqual([
      expect.stringMatching(
        /^@Processor\('work'\) on WorkProcessor: queue "work" is not the module's own: its provider \(getQueueToken\('work'\)\) was overridden, so its processor has no queue to run on; override the processor too/,
      ),
    ]);
  });
});
