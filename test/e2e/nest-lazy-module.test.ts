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

const inspector = new Inspector();
afterAll(() => inspector.close());

it('a queue registered by a lazily loaded module is warned about: its processor does not run', async () => {
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
    expect(logger.messages('warn').filter((m) => m.includes('"late"'))).toEqual([]);
    const late = await app.get(LazyModuleLoader).load(() => LateModule);
    const queue = late.get<WorkQueue>(getQueueToken('late'), { strict: false });
    expect((await queue.add({})).added).toBe(true);
    expect(logger.messages('warn').filter((m) => m.includes('"late"'))).toEqual([
      expect.stringMatching(
        /^queue "late" registered after the application's bootstrap \(a module loaded by LazyModuleLoader\?\): its @Processor\(\) classes, @QueueEventsListener\(\) classes and declared schedules are found at bootstrap only/,
      ),
    ]);
  } finally {
    await app.close();
  }
});
