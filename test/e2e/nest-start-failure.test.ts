/**
 * A bootstrap whose worker cannot start (Redis holds every command: CLIENT PAUSE) fails with the
 * typed error of the step that timed out, never with ioredis' bare "Connection is closed." of a
 * clean-up; app.close() afterwards resolves and leaves no connection nor heartbeat thread. One
 * that fails while a worker's sandbox still boots runs no worker afterwards.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { rmSync, writeFileSync } from 'node:fs';
import { Module } from '@nestjs/common';
import { Redis } from 'ioredis';
import { heartbeatThreadStats } from '../../lib/worker/heartbeat-testing.js';
import {
  getQueueToken,
  Process,
  Processor,
  WorkQueueContext,
  WorkQueueModule,
  type WorkQueue,
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

it('a bootstrap that gives up on a sandbox still booting: its worker closes and takes no job', async () => {
  const gate = slowGate();
  rmSync(gate, { force: true });
  @Module({
    imports: [
      WorkQueueModule.forRoot({
        connection: { url: redis.url },
        prefix: uniqueName('sb'),
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
    expect(await queue.getWorkers()).toEqual([]);
    expect((await queue.getJob(id))?.state).toBe('pending');
  } finally {
    await app.close();
    rmSync(gate, { force: true });
  }
}, 40_000);
