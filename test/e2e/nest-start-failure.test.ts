/**
 * A bootstrap whose worker cannot start (Redis holds every command: CLIENT PAUSE) fails with the
 * typed error of the step that timed out, never with ioredis' bare "Connection is closed." of a
 * clean-up; app.close() afterwards resolves and leaves no connection nor heartbeat thread — nor
 * does the failure itself, for a caller of NestFactory.createApplicationContext, who gets no app
 * to close. One that fails while a worker's sandbox still boots runs no worker afterwards.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { rmSync, writeFileSync } from 'node:fs';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Redis } from 'ioredis';
import { heartbeatThreadStats } from '../../lib/worker/heartbeat-testing.js';
import {
  getQueueToken,
  OnQueueEvent,
  Process,
  Processor,
  QueueEventsListener,
  WorkQueueContext,
  WorkQueueModule,
  WorkQueue,
} from '../../src/index.js';
import { slowGate, SlowProcessor } from '../fixtures/sandbox/nest/slow.processor.js';
import { uniqueName } from '../support/keys.js';
import { createNestApp } from '../support/nest-app.js';
import { connectedClients, startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

let redis: RedisHandle;
let admin: Redis;
beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
});
afterAll(async () => {
  admin.disconnect();
  await redis.dispose();
});

it('a worker start that times out: a typed error naming the step; close() leaves nothing open', async () => {
  @Processor('work')
  class WorkProcessor {
    @Process()
    handle() {
      return 'done';
    }
  }
  @Module({
    imports: [
      WorkQueueModule.forRoot({ connection: { url: redis.url }, prefix: uniqueName('sf') }),
      WorkQueueModule.registerQueue({ name: 'work', commandTimeoutMs: 500 }),
    ],
    providers: [WorkProcessor],
  })
  class AppModule {}
  const app = await createNestApp({ imports: [AppModule] });
  const baseline = await connectedClients(admin);

  // Longer than the queue's check of Redis may take (commandTimeoutMs): the start fails.
  await admin.call('CLIENT', 'PAUSE', '2000', 'ALL');
  const error = await app.init().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toMatchObject({ name: 'WorkQueueError', code: 'REDIS_UNAVAILABLE' });
  // The queue's check of Redis (INFO) is the step that timed out.
  expect((error as Error).message).toMatch(/^queue work: INFO: no reply from Redis within 500 ms/);
  await app.close();

  await waitFor(async () => (await connectedClients(admin)) === baseline, {
    what: `connections back to ${baseline}`,
  });
  await waitFor(() => heartbeatThreadStats().threads === 0, { what: 'no heartbeat thread' });
});

it('NestFactory.createApplicationContext that fails: no connection, reader nor thread left open', async () => {
  @Processor('work')
  class WorkProcessor {
    @Process()
    handle() {
      return 'done';
    }
  }
  @QueueEventsListener('work')
  class WorkEvents {
    @OnQueueEvent('completed')
    completed() {}
  }
  @Module({
    imports: [
      WorkQueueModule.forRoot({
        connection: { url: redis.url },
        prefix: uniqueName('sc'),
        logger: false,
      }),
      WorkQueueModule.registerQueue({ name: 'work', commandTimeoutMs: 500 }),
    ],
    providers: [WorkProcessor, WorkEvents],
  })
  class AppModule {}
  const baseline = await connectedClients(admin);
  await admin.call('CLIENT', 'PAUSE', '2000', 'ALL');
  const error = await NestFactory.createApplicationContext(AppModule, {
    logger: false,
    abortOnError: false,
  }).then(
    (app) => app.close().then(() => 'started'),
    (e: unknown) => e,
  );
  expect(error).toMatchObject({ name: 'WorkQueueError', code: 'REDIS_UNAVAILABLE' });
  // No app.close(): what the module opened closes by itself.
  await waitFor(async () => (await connectedClients(admin)) === baseline, {
    what: `connections back to ${baseline}`,
  });
  await waitFor(() => heartbeatThreadStats().threads === 0, { what: 'no heartbeat thread' });
});

it('a bootstrap that gives up on a sandbox still booting: its worker closes and takes no job', async () => {
  const gate = slowGate();
  const prefix = uniqueName('sb');
  rmSync(gate, { force: true });
  @Module({
    imports: [
      WorkQueueModule.forRoot({
        connection: { url: redis.url },
        prefix,
        logger: false,
      }),
      WorkQueueModule.registerQueue({ name: 'slow' }),
    ],
    providers: [SlowProcessor],
  })
  class AppModule {}
  const app = await createNestApp({ imports: [AppModule] });
  try {
    const queue = app.get<WorkQueue>(getQueueToken('slow'));
    const { id } = await queue.add({});
    // The sandbox's module waits at the gate past the bootstrap's 10 s bound.
    const error = await app.init().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'TIMEOUT' });
    // The sandbox may boot now: the start it belonged to ends (closed, or started for good).
    const worker = app.get(WorkQueueContext).getWorker('slow')!;
    let settled = false;
    void worker.start().then(
      () => (settled = true),
      () => (settled = true),
    );
    writeFileSync(gate, '');
    await waitFor(() => settled, { timeoutMs: 20_000, what: "the worker's start settled" });
    expect(worker.liveness.paused).toBe(true); // closing
    // (The failed bootstrap closed the app's connection: read on one of our own.)
    const probe = new WorkQueue(admin, 'slow', { prefix, logger: false });
    expect(await probe.getWorkers()).toEqual([]);
    expect((await probe.getJob(id))?.state).toBe('pending');
    await probe.close();
  } finally {
    await app.close();
    rmSync(gate, { force: true });
  }
}, 40_000);
