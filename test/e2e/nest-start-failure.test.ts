/**
 * A bootstrap whose worker cannot start (Redis holds every command: CLIENT PAUSE) fails with the
 * typed error of the step that timed out, never with ioredis' bare "Connection is closed." of a
 * clean-up; app.close() afterwards resolves and leaves no connection nor heartbeat thread.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { Redis } from 'ioredis';
import { heartbeatThreadStats } from '../../lib/worker/heartbeat-testing.js';
import { Process, Processor, WorkQueueModule } from '../../src/index.js';
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
