// The explorer's tests (nest-explorer.test.ts, nest-explorer-problems.test.ts): a testing module
// of the work-queue module with the given providers, and the error of its failed bootstrap.
import { afterEach, expect } from '@jest/globals';
import type { Provider } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { WorkQueueError, WorkQueueModule, type Job } from '../../src/index.js';
import { MemoryLogger } from '../support/nest-app.js';

// Nothing here touches Redis: the module's own connection is lazy and no worker is started
// (explore() is called directly, or init() fails before the workers would start).
export const connection = { url: 'redis://127.0.0.1:1' };

/**
 * compile() for one test file; every module compiled, and every one pushed to `open`, is closed
 * after each test.
 */
export function explorerModules() {
  const open: TestingModule[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((m) => m.close()));
  });

  async function compile(
    providers: Provider[],
    queues: string[] = ['emails'],
    logger = new MemoryLogger(),
  ): Promise<TestingModule> {
    const ref = await Test.createTestingModule({
      imports: [
        WorkQueueModule.forRoot({ connection, logger, cleaner: false }),
        WorkQueueModule.registerQueue(...queues.map((name) => ({ name }))),
      ],
      providers,
    }).compile();
    open.push(ref);
    return ref;
  }

  return { compile, open };
}

export async function bootstrapError(ref: TestingModule): Promise<WorkQueueError> {
  try {
    await ref.init();
  } catch (e) {
    expect(e).toBeInstanceOf(WorkQueueError);
    return e as WorkQueueError;
  }
  throw new Error('expected the bootstrap to fail');
}

export const job = (name?: string) => ({ id: '1', name, data: null }) as unknown as Job;
