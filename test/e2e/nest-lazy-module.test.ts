/**
 * A module loaded after the bootstrap (LazyModuleLoader) that registers a queue: the queue works
 * for adding, but processors, queue-events listeners and schedules are found at bootstrap only —
 * the module says so once (it said nothing: the queue's jobs waited for a worker that never came).
 */
import { afterAll, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { LazyModuleLoader } from '@nestjs/core';
import {
  getQueueToken,
  Process,
  Processor,
  WorkQueueModule,
  type WorkQueue,
} from '../../src/index.js';
import { testRedisUrl, uniqueName } from '../support/keys.js';
import { createNestApp, Inspector, MemoryLogger } from '../support/nest-app.js';
import { waitFor } from '../support/wait.js';

const inspector = new Inspector();
afterAll(() => inspector.close());

it('a lazily loaded module with a processor is warned about (it does not run); one that only adds jobs is not', async () => {
  const prefix = inspector.track(uniqueName('t'));
  const logger = new MemoryLogger();
  @Processor('late')
  class LateProcessor {
    @Process()
    run(): string {
      return 'ran';
    }
  }
  @Module({
    imports: [WorkQueueModule.registerQueue({ name: 'late' })],
    providers: [LateProcessor],
  })
  class LateModule {}
  @Module({
    imports: [WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, prefix, logger })],
  })
  class AppModule {}
  const app = await createNestApp({ imports: [AppModule] });
  try {
    await app.init();
    // A lazily loaded module that only adds jobs (loaded first: its check, a turn after its
    // build, has run once the later one's warning is logged): nothing to say.
    @Module({ imports: [WorkQueueModule.registerQueue({ name: 'producer' })] })
    class ProducerModule {}
    const producer = await app.get(LazyModuleLoader).load(() => ProducerModule);
    const outbox = producer.get<WorkQueue>(getQueueToken('producer'), { strict: false });
    expect((await outbox.add({})).added).toBe(true);
    const late = await app.get(LazyModuleLoader).load(() => LateModule);
    const queue = late.get<WorkQueue>(getQueueToken('late'), { strict: false });
    expect((await queue.add({})).added).toBe(true);
    await waitFor(() => logger.messages('warn').some((m) => m.includes('"late"')), {
      what: 'the warning',
    });
    expect(logger.messages('warn').filter((m) => m.includes('after the application'))).toEqual([
      expect.stringMatching(
        /^"late" registered after the application's bootstrap \(a module loaded by LazyModuleLoader\?\): LateProcessor will not run — processors, @QueueEventsListener\(\) classes and declared schedules are found at bootstrap only/,
      ),
    ]);
  } finally {
    await app.close();
  }
});
