// WorkQueueModule.registerQueue() and registerQueueAsync(): module defaults and per-queue
// overrides, every problem of every registration listed at bootstrap, one queue registered twice.
import { describe, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  getQueueToken,
  WorkQueueContext,
  WorkQueueModule,
  type WorkQueue,
  type WorkQueueError,
} from '../../src/index.js';
import { optionModules, url } from './nest-options-modules.js';

const { compile, compileError } = optionModules();

describe('module options', () => {
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

  it('registerQueueAsync(a, b, c): every factory runs first; the problems of each invalid result at once, each named', async () => {
    const ran: string[] = [];
    const err = await compileError([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      WorkQueueModule.registerQueueAsync(
        { name: 'ok', useFactory: () => (ran.push('ok'), { maxAttempts: 2 }) },
        { name: 'a', useFactory: async () => (ran.push('a'), 'oops') as never },
        { name: 'b', useFactory: () => (ran.push('b'), { leaseMs: -1, maxAttempts: 0 }) },
      ),
    ]);
    expect(ran.sort()).toEqual(['a', 'b', 'ok']);
    expect(err.code).toBe('INVALID_OPTIONS');
    expect(err.message).toContain(
      'invalid options in WorkQueueModule.registerQueueAsync("a", "b")',
    );
    expect(err.problems).toEqual([
      '"a": useFactory must return an object of queue options (or nothing), got "oops"',
      '"b": leaseMs must be a positive integer, got -1',
      '"b": maxAttempts must be a positive integer, got 0',
    ]);
    // Valid results in two calls: each call's providers are its own.
    const ref = await compile([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      WorkQueueModule.registerQueueAsync({ name: 'x', useFactory: () => ({ maxAttempts: 3 }) }),
      WorkQueueModule.registerQueueAsync({ name: 'y', useFactory: (() => undefined) as never }),
    ]);
    expect(ref.get<WorkQueue>(getQueueToken('x')).options.maxAttempts).toBe(3);
    expect(ref.get<WorkQueue>(getQueueToken('y')).name).toBe('y');
  });

  it('registrations of the wrong shape (null, no useFactory, a bad inject) fail the bootstrap with the others, typed', async () => {
    // (They threw a bare TypeError at the call, reading .name of null, or at the bootstrap,
    // calling a useFactory that is no function, before the other registrations were checked.)
    const err = await compileError([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      WorkQueueModule.registerQueueAsync(
        null as never,
        { name: 'a', useFactory: 5 as never },
        { name: 'b', useFactory: () => ({ maxAttempts: -1 }) },
        { name: 'c', useFactory: () => ({}), inject: 'x' as never },
      ),
    ]);
    expect(err.problems).toEqual([
      '"null": a queue registration must be an object { name, ...options }, got null',
      `"a": useFactory must be a function returning the queue's options, got 5`,
      '"b": maxAttempts must be a positive integer, got -1',
      '"c": inject must be an array of the tokens useFactory takes, got "x"',
    ]);
    const sync = await compileError([
      WorkQueueModule.forRoot({ connection: { url }, logger: false }),
      WorkQueueModule.registerQueue(null as never, { name: 'ok' }),
    ]);
    expect(sync.problems).toEqual([
      'a queue registration must be an object { name, ...options }, got null',
    ]);
    for (const options of [{}, null, { useFactory: 'x' }]) {
      const root = await compileError([WorkQueueModule.forRootAsync(options as never)]);
      expect(root.problems).toEqual([
        `forRootAsync needs { useFactory } (a function, with inject), { useClass } or { useExisting }, got ${JSON.stringify(options)}`,
      ]);
    }
  });

  it('registerQueue, registerQueueAsync or registerFlowProducer without forRoot(): our error says to import it', async () => {
    for (const registration of [
      WorkQueueModule.registerQueue({ name: 'a' }),
      WorkQueueModule.registerQueueAsync({ name: 'a', useFactory: () => ({}) }),
      WorkQueueModule.registerFlowProducer(),
    ]) {
      const err = await compileError([registration]);
      expect(err.code).toBe('INVALID_OPTIONS');
      expect(err.problems).toEqual([
        expect.stringMatching(
          /^WorkQueueModule.forRoot\(\) \(or forRootAsync\(\)\) is not imported: import it once, in the root module/,
        ),
      ]);
    }
  });

  it('a queue a test overrides needs no forRoot(), registered sync or async', async () => {
    const mock = { name: 'emails' };
    for (const registration of [
      WorkQueueModule.registerQueue({ name: 'emails' }),
      WorkQueueModule.registerQueueAsync({ name: 'emails', useFactory: () => ({}) }),
    ]) {
      const ref = await Test.createTestingModule({ imports: [registration] })
        .overrideProvider(getQueueToken('emails'))
        .useValue(mock)
        .compile();
      expect(ref.get(getQueueToken('emails'))).toBe(mock);
      await ref.close();
    }
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

  it('registered twice on connections with secrets: the message shows neither password nor key', async () => {
    const secretUrl = url.replace('redis://', 'redis://app:S3cretPw@');
    const tls = { key: '-----BEGIN PRIVATE KEY----- k', ca: 'ca-pem' };
    const conns = [
      { url: secretUrl },
      { redis: { host: '127.0.0.1', password: 'S3cretPw', tls } },
      { sentinels: [{ host: '127.0.0.1', port: 1 }], name: 'm', sentinelPassword: 'S3cretPw' },
    ];
    for (const connection of conns) {
      @Module({
        imports: [WorkQueueModule.registerQueue({ name: 'emails', connection: { ...connection } })],
      })
      class A {}
      @Module({
        imports: [
          WorkQueueModule.registerQueue({
            name: 'emails',
            connection: { ...connection },
            maxAttempts: 3,
          }),
        ],
      })
      class B {}
      const err = await compileError([
        WorkQueueModule.forRoot({ connection: { url }, logger: false }),
        A,
        B,
      ]);
      const shown = `${err.message} ${JSON.stringify((err as WorkQueueError).problems)}`;
      expect(shown).toContain('registered twice with different options');
      expect(shown).toContain('<secret #');
      expect(shown).not.toMatch(/S3cretPw|PRIVATE KEY|ca-pem/);
    }
  });
});
