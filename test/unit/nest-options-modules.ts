// The module options' tests (nest-options.test.ts, nest-queue-options.test.ts): testing modules
// of the work-queue module, and the error of a bootstrap that fails on its options.
import { afterEach, expect } from '@jest/globals';
import { Test, type TestingModule } from '@nestjs/testing';
import { WorkQueueError } from '../../src/index.js';

// No test here reaches Redis: the module's connection is lazy and nothing is initialised.
export const url = 'redis://127.0.0.1:1';

/**
 * compile() and compileError() for one test file; every module compiled is closed after each
 * test.
 */
export function optionModules() {
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

  return { compile, compileError };
}
