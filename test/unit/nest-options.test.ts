import { afterEach, describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  getQueueToken,
  WorkQueueContext,
  WorkQueueError,
  WorkQueueModule,
  type WorkQueue,
  type WorkQueueModuleOptions,
} from '../../src/index.js';
import { moduleOptionProblems } from '../../src/utils/validate-options.util.js';

// No test here reaches Redis: the module's connection is lazy and nothing is initialised.
const url = 'redis://127.0.0.1:1';
const open: TestingModule[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
});

async function compile(imports: Parameters<typeof Test.createTestingModule>[0]['imports']) {
  const ref = await Test.createTestingModule({ imports }).compile();
  open.push(ref);
  return ref;
}

async function compileError(
  imports: Parameters<typeof Test.createTestingModule>[0]['imports'],
): Promise<WorkQueueError> {
  try {
    open.push(await Test.createTestingModule({ imports }).compile());
  } catch (e) {
    expect(e).toBeInstanceOf(WorkQueueError);
    expect((e as WorkQueueError).code).toBe('INVALID_OPTIONS');
    return e as WorkQueueError;
  }
  throw new Error('expected the bootstrap to fail');
}

const everythingWrong = {
  connection: { url: 'http://localhost', redis: {} },
  prefix: 'a b',
  defaults: {
    leaseMs: -1,
    concurrency: 0,
    backoff: { type: 'linear', delayMs: 1 },
    prefix: 'x',
    concurency: 2,
  },
  logger: { warn: () => undefined },
  shutdownTimeoutMs: -5,
  cleaner: { intervalMs: 0 },
  extra: true,
} as unknown as WorkQueueModuleOptions;

const everyProblem = [
  'extra is not a known option',
  'connection has url and redis: give exactly one of { url }, { redis }, { client }, { cluster } or { sentinels, name }',
  'connection.url must be a redis:// or rediss:// URL, got "http://localhost"',
  `prefix must be 1-100 characters of letters, digits, '.', '_', '-' or ':' (no '{', '}' or spaces), got "a b"`,
  'defaults.prefix is not allowed: set prefix at the top level of the options',
  'defaults.concurency is not a known option',
  'defaults.leaseMs must be a positive integer, got -1',
  `defaults.backoff.type must be 'fixed' or 'exponential', got "linear"`,
  'defaults.concurrency must be a positive integer, got 0',
  'logger must be false or a Nest LoggerService (log, warn, error)',
  'shutdownTimeoutMs must be an integer >= 0, got -5',
  'cleaner.intervalMs must be a positive integer, got 0',
];

describe('module options', () => {
  it('forRoot: invalid options fail the bootstrap with every problem, one per line', async () => {
    const err = await compileError([WorkQueueModule.forRoot(everythingWrong)]);
    expect(err.problems).toEqual(everyProblem);
    expect(err.message.split('\n')).toEqual([
      'invalid WorkQueueModule options:',
      ...everyProblem.map((p) => `  - ${p}`),
    ]);
  });

  it('forRootAsync: options from the factory are validated at bootstrap', async () => {
    const err = await compileError([
      WorkQueueModule.forRootAsync({ useFactory: async () => everythingWrong }),
    ]);
    expect(err.problems).toEqual(everyProblem);
  });

  it('a cleaner interval longer than a Node timer waits is refused', () => {
    expect(
      moduleOptionProblems({ connection: { url: 'redis://x' }, cleaner: { intervalMs: 2 ** 31 } }),
    ).toEqual([
      'cleaner.intervalMs must be at most 2147483647 (ms: the longest a timer waits), got 2147483648',
    ]);
  });

  it('reports a missing or empty connection and non-object options', () => {
    expect(moduleOptionProblems({})).toEqual([
      'connection is required: give exactly one of { url }, { redis }, { client }, { cluster } or { sentinels, name }',
    ]);
    expect(moduleOptionProblems({ connection: {} })).toEqual([
      'connection is empty: give exactly one of { url }, { redis }, { client }, { cluster } or { sentinels, name }',
    ]);
    expect(moduleOptionProblems(undefined)).toEqual([
      'options must be an object with at least { connection }, got undefined',
    ]);
    expect(
      moduleOptionProblems({
        connection: { client: { not: 'a client' }, cluster: { nodes: [] } },
      }),
    ).toEqual([
      'connection has client and cluster: give exactly one of { url }, { redis }, { client }, { cluster } or { sentinels, name }',
      'connection.client must be an ioredis Redis or Cluster instance',
      'connection.cluster.nodes must be a non-empty array of nodes, got []',
    ]);
  });

  it('accepts each kind of connection', () => {
    const client = new Redis({ lazyConnect: true });
    for (const connection of [
      { url: 'redis://localhost:6379/2' },
      { url: 'rediss://user:pw@example.com:6380' },
      { redis: { host: 'localhost', port: 6379 } },
      { client },
      { cluster: { nodes: [{ host: 'localhost', port: 7000 }], options: {} } },
    ]) {
      expect(moduleOptionProblems({ connection })).toEqual([]);
    }
    client.disconnect();
  });

  it('forRootAsync: the factory gets injected providers from imported modules', async () => {
    @Injectable()
    class Config {
      get(key: string): string {
        return { REDIS_URL: url, PREFIX: 'from-config' }[key]!;
      }
    }
    @Module({ providers: [Config], exports: [Config] })
    class ConfigModule {}
    const ref = await compile([
      WorkQueueModule.forRootAsync({
        imports: [ConfigModule],
        inject: [Config],
        useFactory: (config: Config) => ({
          connection: { url: config.get('REDIS_URL') },
          prefix: config.get('PREFIX'),
          logger: false,
        }),
      }),
      WorkQueueModule.registerQueue({ name: 'emails', maxAttempts: 7 }),
    ]);
    const queue = ref.get<WorkQueue>(getQueueToken('emails'));
    expect(queue.options.prefix).toBe('from-config');
    expect(queue.options.maxAttempts).toBe(7);
    expect(queue.keys.base).toBe('from-config:{emails}:');
  });

  it('queues start from the module defaults; registerQueue overrides them', async () => {
    const ref = await compile([
      WorkQueueModule.forRoot({
        connection: { url },
        prefix: 'p',
        logger: false,
        defaults: { maxAttempts: 5, leaseMs: 1_234, concurrency: 3 },
      }),
      WorkQueueModule.registerQueue({ name: 'a' }, { name: 'b', maxAttempts: 9, prefix: 'other' }),
    ]);
    const a = ref.get<WorkQueue>(getQueueToken('a'));
    const b = ref.get<WorkQueue>(getQueueToken('b'));
    expect(a.options).toMatchObject({ prefix: 'p', maxAttempts: 5, leaseMs: 1_234 });
    expect(b.options).toMatchObject({ prefix: 'other', maxAttempts: 9, leaseMs: 1_234 });
    const context = ref.get(WorkQueueContext);
    expect(context.workerDefaults).toEqual({ concurrency: 3 });
    expect(context.queues).toEqual([a, b]);
  });

  it('registerQueue: invalid names and options fail the bootstrap with every problem', async () => {
    const err = await compileError([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      WorkQueueModule.registerQueue({
        name: 'bad name',
        maxAttempts: 0,
        logger: false,
      } as unknown as { name: string }),
    ]);
    expect(err.message).toContain('invalid options in WorkQueueModule.registerQueue("bad name")');
    expect(err.problems).toEqual([
      `name must be 1-100 characters of letters, digits, '.', '_', '-' or ':' (no '{', '}' or spaces), got "bad name"`,
      'logger is not allowed per queue: set it in WorkQueueModule.forRoot()',
      'maxAttempts must be a positive integer, got 0',
    ]);
  });

  it('registerQueue(a, b, c): the problems of every invalid registration at once, each named', async () => {
    const err = await compileError([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      WorkQueueModule.registerQueue({ name: 'ok' }, { name: 'a', maxAttempts: 0 }, {
        name: 'b',
        leaseMs: -1,
        removeOnComplete: true,
      } as unknown as { name: string }),
    ]);
    expect(err.message).toContain('invalid options in WorkQueueModule.registerQueue("a", "b")');
    expect(err.problems).toEqual([
      '"a": maxAttempts must be a positive integer, got 0',
      `"b": removeOnComplete is not a known option (BullMQ's removeOnComplete is the queue option keepCompleted here)`,
      '"b": leaseMs must be a positive integer, got -1',
    ]);
  });

  it('registerQueue({ groups }): the per-group limits reach the queue; bad ones fail the bootstrap, every problem listed', async () => {
    const ref = await compile([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      WorkQueueModule.registerQueue({
        name: 'tenants',
        groups: { concurrency: 1, limiter: { max: 10, durationMs: 1_000 } },
      }),
    ]);
    expect(ref.get<WorkQueue>(getQueueToken('tenants')).options.groups).toEqual({
      concurrency: 1,
      limiter: { max: 10, durationMs: 1_000 },
    });
    const err = await compileError([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      WorkQueueModule.registerQueue({
        name: 'tenants',
        groups: { concurrency: 1.5, limiter: { max: 0, durationMs: -1 } },
      }),
    ]);
    expect(err.problems).toEqual([
      'groups.concurrency must be an integer 1..1000000, got 1.5',
      'groups.limiter.max must be an integer 1..1000000, got 0',
      'groups.limiter.durationMs must be an integer 1..86400000, got -1',
    ]);
  });

  it('registerQueueAsync: the factory resolves the overrides', async () => {
    const ref = await compile([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      WorkQueueModule.registerQueueAsync({
        name: 'emails',
        inject: ['MAX'],
        imports: [
          {
            module: class MaxModule {},
            providers: [{ provide: 'MAX', useValue: 4 }],
            exports: ['MAX'],
          },
        ],
        useFactory: async (max: number) => ({ maxAttempts: max }),
      }),
    ]);
    expect(ref.get<WorkQueue>(getQueueToken('emails')).options.maxAttempts).toBe(4);
  });

  it('registerQueueAsync: a factory result that is no options object, or bad options, fail naming registerQueueAsync', async () => {
    const bad = (useFactory: () => unknown) =>
      compile([
        WorkQueueModule.forRoot({ connection: { url }, logger: false }),
        WorkQueueModule.registerQueueAsync({ name: 'emails', useFactory: useFactory as never }),
      ]).then(
        () => undefined,
        (e: unknown) => e as WorkQueueError,
      );
    const e = await bad(() => 'oops');
    expect(e).toMatchObject({
      code: 'INVALID_OPTIONS',
      problems: ['useFactory must return an object of queue options (or nothing), got "oops"'],
    });
    expect(e!.message).toContain('WorkQueueModule.registerQueueAsync("emails")');
    const o = await bad(() => ({ maxAttempts: 0 }));
    expect(o!.message).toContain('WorkQueueModule.registerQueueAsync("emails")');
    expect(o!.problems).toEqual([expect.stringMatching(/^maxAttempts /)]);
  });

  it('one queue registered in two modules is one instance; different options are an error', async () => {
    @Module({ imports: [WorkQueueModule.registerQueue({ name: 'emails', maxAttempts: 2 })] })
    class A {}
    @Module({ imports: [WorkQueueModule.registerQueue({ maxAttempts: 2, name: 'emails' })] })
    class B {}
    const ref = await compile([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      A,
      B,
    ]);
    expect(ref.get(WorkQueueContext).queues).toHaveLength(1);

    @Module({ imports: [WorkQueueModule.registerQueue({ name: 'emails', maxAttempts: 3 })] })
    class C {}
    const err = await compileError([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      A,
      C,
    ]);
    expect(err.message).toContain('queue "emails" is registered twice with different options');
  });

  it('never closes a client it was given; closes the one it made', async () => {
    const given = new Redis(url, { lazyConnect: true });
    const ref = await Test.createTestingModule({
      imports: [WorkQueueModule.forRoot({ connection: { client: given }, logger: false })],
    }).compile();
    const context = ref.get(WorkQueueContext);
    expect(context.client).toBe(given);
    expect(context.ownsClient).toBe(false);
    await ref.close();
    expect(given.status).toBe('wait');
    given.disconnect();

    const ref2 = await Test.createTestingModule({
      imports: [WorkQueueModule.forRoot({ connection: { url }, logger: false })],
    }).compile();
    const made = ref2.get(WorkQueueContext).client;
    await ref2.close();
    expect(made.status).toBe('end');
  });
});
