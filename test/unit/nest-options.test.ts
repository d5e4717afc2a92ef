// WorkQueueModule.forRoot() and forRootAsync(): their options checked at bootstrap (every problem
// listed), each kind of connection, and the client the module closes (or not). The options of
// registerQueue() are nest-queue-options.test.ts.
import { describe, expect, it } from '@jest/globals';
import { Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  getQueueToken,
  WorkQueueContext,
  WorkQueueModule,
  type WorkQueue,
  type WorkQueueModuleOptions,
} from '../../src/index.js';
import { moduleOptionProblems } from '../../src/utils/validate-options.util.js';
import { optionModules, url } from './nest-options-modules.js';

const { compile, compileError } = optionModules();

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

  it('a cleaner interval or shutdown timeout longer than a Node timer waits is refused', () => {
    expect(
      moduleOptionProblems({
        connection: { url: 'redis://x' },
        cleaner: { intervalMs: 2 ** 31 },
        shutdownTimeoutMs: 3e9,
      }),
    ).toEqual([
      'shutdownTimeoutMs must be at most 2147483647 (ms: the longest a timer waits), got 3000000000',
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

  it('forRootAsync: useClass / useExisting take the options from create(); a class without it is named', async () => {
    @Injectable()
    class Options {
      create(): WorkQueueModuleOptions {
        return { connection: { url }, prefix: 'from-class', logger: false };
      }
    }
    const ref = await compile([
      WorkQueueModule.forRootAsync({ useClass: Options }),
      WorkQueueModule.registerQueue({ name: 'emails' }),
    ]);
    expect(ref.get<WorkQueue>(getQueueToken('emails')).keys.base).toBe('from-class:{emails}:');

    @Injectable()
    class BullConfig {
      createSharedConfiguration() {
        return { connection: { url } };
      }
    }
    @Module({ providers: [BullConfig], exports: [BullConfig] })
    class BullConfigModule {}
    for (const async of [
      { useClass: BullConfig },
      { imports: [BullConfigModule], useExisting: BullConfig },
    ]) {
      const err = await compileError([WorkQueueModule.forRootAsync(async as never)]);
      expect(err).toMatchObject({ code: 'INVALID_OPTIONS' });
      expect(err.problems).toEqual([
        "forRootAsync({ useClass / useExisting: BullConfig }): BullConfig has no create() method returning the module's options (@nestjs/bullmq's createSharedConfiguration() is create() here)",
      ]);
    }
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
