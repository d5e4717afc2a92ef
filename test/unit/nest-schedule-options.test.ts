// The checks of declared schedules that need no Redis: against the queue's own options, together
// with the queue's other problems, and in the comparison of two registrations of one queue.
import { afterEach, describe, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import { WorkQueueContext, WorkQueueError, WorkQueueModule } from '../../src/index.js';

// Nothing here reaches Redis: the connection is lazy and no module is initialised.
const url = 'redis://127.0.0.1:1';
const open: TestingModule[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((m) => m.close()));
});

type Imports = Parameters<typeof Test.createTestingModule>[0]['imports'];

async function compileError(imports: Imports): Promise<WorkQueueError> {
  try {
    open.push(await Test.createTestingModule({ imports }).compile());
  } catch (e) {
    expect(e).toBeInstanceOf(WorkQueueError);
    return e as WorkQueueError;
  }
  throw new Error('expected the module creation to fail');
}

const root = (defaults = {}) =>
  WorkQueueModule.forRoot({ connection: { url }, logger: false, defaults });

describe('declared schedules, checked with the module', () => {
  it("checks each template against the queue's own options (defaults and overrides)", async () => {
    const err = await compileError([
      root({ codec: 'string' }),
      WorkQueueModule.registerQueue({
        name: 'reports',
        maxPayloadBytes: 16,
        schedules: [
          { id: 'big', every: 1_000, data: 'x'.repeat(100) },
          { id: 'object', every: 1_000, data: { not: 'a string' } },
        ],
      }),
    ]);
    expect(err.code).toBe('INVALID_OPTIONS');
    expect(err.problems).toHaveLength(2);
    expect(err.problems[0]).toMatch(/^schedules\[0\] \("big"\): .*16/);
    expect(err.problems[1]).toMatch(/^schedules\[1\] \("object"\): /);
  });

  it("lists the queue's other problems alongside", async () => {
    const err = await compileError([
      root(),
      WorkQueueModule.registerQueue({
        name: 'reports',
        maxAttempts: 0,
        schedules: [
          { id: 'x', every: 1.5, data: null },
          { id: 'y', every: 1_000, data: null, group: 'tenant-1', tenant: 1 } as never,
        ],
      }),
    ]);
    expect(err.problems).toEqual([
      expect.stringMatching(/^maxAttempts /),
      'schedules[0] ("x"): every must be a positive integer (ms) up to 1e12, got 1.5',
      // (group is known: a template may name one.)
      expect.stringMatching(
        /^schedules\[1\] \("y"\): tenant is not a known option; known: .*, skipIfRunning, group$/,
      ),
    ]);
  });

  it('one queue registered twice must declare the same schedules', async () => {
    const at = (iso: string) => ({ id: 'a', every: 1_000, startAt: new Date(iso), data: 1 });
    @Module({
      imports: [WorkQueueModule.registerQueue({ name: 'q', schedules: [at('2030-01-01')] })],
    })
    class A {}
    @Module({
      imports: [WorkQueueModule.registerQueue({ name: 'q', schedules: [at('2030-01-01')] })],
    })
    class Same {}
    @Module({
      imports: [WorkQueueModule.registerQueue({ name: 'q', schedules: [at('2031-01-01')] })],
    })
    class Other {}
    const ref = await Test.createTestingModule({ imports: [root(), A, Same] }).compile();
    open.push(ref);
    expect(ref.get(WorkQueueContext).queues).toHaveLength(1);
    const err = await compileError([root(), A, Other]);
    expect(err.message).toContain('queue "q" is registered twice with different options');
  });
});
