/**
 * WorkQueueModule over Redis Sentinel: both connection forms process jobs and the health
 * indicator is up; a master name the sentinels do not know fails the bootstrap in bounded time
 * with one message; a core client built without failoverDetector is warned about; one built to
 * reach a replica fails its writes at once.
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Redis } from 'ioredis';
import { WorkQueueHealthIndicator, WorkQueueHealthModule } from '../../src/health/index.js';
import {
  getQueueToken,
  Process,
  Processor,
  SENTINEL_CLIENT_OPTIONS,
  WorkQueue,
  WorkQueueError,
  WorkQueueModule,
  type WorkQueueConnectionOptions,
} from '../../src/index.js';
import { errorOf } from '../support/core.js';
import { uniqueName } from '../support/keys.js';
import { createNestApp, MemoryLogger } from '../support/nest-app.js';
import { startRedisSentinel, type RedisSentinelHandle } from '../support/redis-sentinel.js';
import { waitFor } from '../support/wait.js';

let setup: RedisSentinelHandle;
beforeAll(async () => {
  setup = await startRedisSentinel();
}, 60_000);
afterAll(() => setup?.dispose());

/** An app with one queue and its processor over `connection`; what the processor saw. */
async function app(connection: WorkQueueConnectionOptions, name: string, logger: MemoryLogger) {
  const seen: unknown[] = [];
  @Processor(name)
  class Handler {
    @Process()
    run(job: { data: unknown }) {
      seen.push(job.data);
    }
  }
  @Module({
    imports: [
      WorkQueueModule.forRoot({ connection, logger, cleaner: false }),
      WorkQueueModule.registerQueue({ name }),
      TerminusModule,
      WorkQueueHealthModule,
    ],
    providers: [Handler],
  })
  class AppModule {}
  return { app: await createNestApp({ imports: [AppModule] }), seen };
}

describe('WorkQueueModule over Redis Sentinel', () => {
  it.each([
    ['{ sentinels, name }', () => ({ sentinels: setup.sentinels, name: setup.name })],
    [
      '{ redis: { sentinels, name } }',
      () => ({ redis: { sentinels: setup.sentinels, name: setup.name } }),
    ],
  ])('%s: processes a job, the health indicator is up', async (_form, connection) => {
    const name = uniqueName('nest');
    const logger = new MemoryLogger();
    const { app: nest, seen } = await app(connection(), name, logger);
    try {
      await nest.init();
      await nest.get<WorkQueue>(getQueueToken(name)).add({ hello: 'sentinel' });
      await waitFor(() => seen.length === 1, { what: 'the job processed' });
      expect(seen).toEqual([{ hello: 'sentinel' }]);
      const health = await nest.get(WorkQueueHealthIndicator).isHealthy('queues');
      expect(health.queues.status).toBe('up');
      // The module's Sentinel connections follow failovers: nothing to warn about.
      expect(logger.messages('warn').filter((m) => /Sentinel/.test(m))).toEqual([]);
    } finally {
      await nest.close();
    }
  });

  it('a master name the sentinels do not know: app.init() fails within commandTimeoutMs, naming the master and what each sentinel said', async () => {
    const logger = new MemoryLogger();
    const name = uniqueName('nowhere');
    const { app: nest } = await app(
      { sentinels: setup.sentinels, name: 'nosuchmaster' },
      name,
      logger,
    );
    try {
      const e = (await errorOf(nest.init())) as WorkQueueError;
      expect(e).toBeInstanceOf(WorkQueueError);
      expect(e.code).toBe('REDIS_UNAVAILABLE');
      const addresses = setup.sentinels.map((s) => `${s.host}:${s.port}`);
      const said = addresses.map((a) => `${a}: ERR No such master with that name`).join('; ');
      expect(e.message).toMatch(
        new RegExp(
          `^queue ${name}: INFO: no reply from Redis within 5000 ms \\(connection \\w+; the command may still run if it reconnects\\): ` +
            `Redis Sentinel master 'nosuchmaster' \\(sentinels ${addresses.join(', ')}\\): no sentinel gave the master's address \\(${said}\\)$`,
        ),
      );
    } finally {
      await nest.close();
    }
  });

  it('core: a Sentinel client without failoverDetector gets a warning; one built with SENTINEL_CLIENT_OPTIONS does not', async () => {
    const conn = { sentinels: setup.sentinels, name: setup.name };
    const plain = new Redis(conn);
    const following = new Redis({ ...SENTINEL_CLIENT_OPTIONS, ...conn });
    try {
      const warnings = async (client: Redis) => {
        const logger = new MemoryLogger();
        await new WorkQueue(client, uniqueName('core'), { logger }).ready();
        return logger.messages('warn');
      };
      expect(await warnings(plain)).toEqual([
        expect.stringMatching(/: this Sentinel client has no failoverDetector: after a failover/),
      ]);
      expect(await warnings(following)).toEqual([]);
    } finally {
      plain.disconnect();
      following.disconnect();
    }
  });

  it("core: a role 'slave' client built with SENTINEL_CLIENT_OPTIONS: a write fails at once naming READONLY, without a reconnect loop", async () => {
    const replica = new Redis({
      ...SENTINEL_CLIENT_OPTIONS,
      sentinels: setup.sentinels,
      name: setup.name,
      role: 'slave',
    });
    replica.on('error', () => undefined);
    let reconnects = 0;
    replica.on('reconnecting', () => reconnects++);
    const queue = new WorkQueue(replica, uniqueName('replica'), { logger: false });
    try {
      const e = (await errorOf(queue.add({ a: 1 }))) as WorkQueueError;
      expect(e.code).toBe('REDIS_UNAVAILABLE');
      expect(e.message).toMatch(/READONLY/);
      expect(replica.status).toBe('ready');
      expect(reconnects).toBe(0);
    } finally {
      await queue.close();
      replica.disconnect();
    }
  });

  // (Last: it kills every data node of this file's set-up.)
  it('every data node down: app.close() settles what waited on the connections and logs nothing after it', async () => {
    const name = uniqueName('down');
    const logger = new MemoryLogger();
    const { app: nest, seen } = await app(
      { sentinels: setup.sentinels, name: setup.name },
      name,
      logger,
    );
    await nest.init();
    const queue = nest.get<WorkQueue>(getQueueToken(name));
    await queue.add({ hello: 'sentinel' });
    await waitFor(() => seen.length === 1, { what: 'the job processed' });
    for (const port of setup.servers) await setup.kill(port);
    // A call that waits for Redis (commandTimeoutMs 5 000) when the app closes.
    const waiting = queue.counts().then(
      () => 'answered',
      (e: unknown) => String(e),
    );
    await nest.close();
    const logged = logger.entries.length;
    // The module's connections closed: what waited on them failed then (a Sentinel client
    // stuck reconnecting had kept its commands, and the process, until their deadlines).
    const outcome = await Promise.race([
      waiting,
      new Promise((r) => setTimeout(() => r('still waiting 1 s after app.close()'), 1_000)),
    ]);
    expect(outcome).toMatch(/Connection is closed/);
    expect(logger.entries.slice(logged)).toEqual([]);
    // The workers said once, in close(), what Redis did not answer.
    expect(logger.messages('error')).toEqual(
      expect.arrayContaining([expect.stringMatching(/worker error: close: Redis did not answer/)]),
    );
    expect(logger.messages().filter((m) => /Connection is closed/.test(m))).toEqual([]);
  });
});
