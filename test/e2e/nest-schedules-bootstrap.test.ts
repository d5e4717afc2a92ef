// Declared schedules that fail the bootstrap: bad declarations (every problem listed, nothing
// written), from registerQueue and registerQueueAsync, and a Redis that does not answer.
import { describe, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { WorkQueueError, WorkQueueModule, type RegisterQueueOptions } from '../../src/index.js';
import { testRedisUrl, uniqueName } from '../support/keys.js';
import { createNestApp } from '../support/nest-app.js';
import { QUEUE, scheduleInstances } from './nest-schedules-instances.js';

const { inspector, startInstance } = scheduleInstances();

describe('declared schedules', () => {
  it('fails the bootstrap on bad declarations, listing every problem, writing nothing', async () => {
    const prefix = inspector.track(uniqueName('sch'));
    const bad = {
      schedules: [
        { id: 'a', every: 0, data: 1 },
        { id: 'b', cron: 'not a cron', tz: 'Mars/Olympus_Mons', data: 1 },
        { id: 'a', every: 100, data: 1, pattern: '* * * * *' },
        { id: 'c', every: 100, startAt: 2_000, endAt: 1_000, priority: 12 },
      ],
      pruneSchedules: 'yes',
    } as unknown as Omit<RegisterQueueOptions, 'name'>;
    const error = await startInstance('a', prefix, bad, []).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WorkQueueError);
    expect(error).toMatchObject({ code: 'INVALID_OPTIONS' });
    const problems = (error as WorkQueueError).problems;
    expect(problems).toEqual([
      'pruneSchedules must be a boolean, got "yes"',
      'schedules[0] ("a"): every must be a positive integer (ms) up to 1e12, got 0',
      'schedules[1] ("b"): tz "Mars/Olympus_Mons" is not a known IANA time zone',
      expect.stringMatching(/^schedules\[1\] \("b"\): cron "not a cron" /),
      expect.stringMatching(
        /^schedules\[2\] \("a"\): pattern is not a known option \(BullMQ's pattern is `cron` here\)/,
      ),
      'schedules[2] ("a"): the same id as schedules[0]; schedule ids are unique per queue',
      'schedules[3] ("c"): endAt is before startAt',
      'schedules[3] ("c"): data is missing',
      'schedules[3] ("c"): priority must be an integer 0 (highest)..9 (lowest), got 12',
    ]);
    expect((error as Error).message).toMatch(
      /^invalid options in WorkQueueModule\.registerQueue\("ticks"\):\n {2}- /,
    );
    expect(await inspector.queue(QUEUE, prefix).listSchedules()).toEqual([]);
  });

  it('checks the declarations of registerQueueAsync too', async () => {
    const prefix = inspector.track(uniqueName('sch'));
    @Module({
      imports: [
        WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, prefix, logger: false }),
        WorkQueueModule.registerQueueAsync({
          name: QUEUE,
          useFactory: async () => ({ schedules: [{ id: 'x', cron: '* * *', data: null }] }),
        }),
      ],
    })
    class AppModule {}
    const error = await createNestApp({ imports: [AppModule] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      code: 'INVALID_OPTIONS',
      problems: [
        `schedules[0] ("x"): cron "* * *" has 3 fields; give 5 (minute first) or 6 (second first)`,
      ],
    });
  });

  it('fails the bootstrap with a clear error when Redis does not answer', async () => {
    const started = Date.now();
    const error = await startInstance(
      'a',
      uniqueName('sch'),
      { commandTimeoutMs: 300, schedules: [{ id: 'tick', every: 1_000, data: 1 }] },
      [],
      { connection: { url: 'redis://127.0.0.1:1' }, processor: false },
    ).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(error).toMatchObject({
      code: 'REDIS_UNAVAILABLE',
      problems: [expect.stringMatching(/^schedule "tick": /)],
    });
    expect((error as Error).message).toMatch(
      new RegExp(
        `^queue "${QUEUE}": its declared schedules could not be applied:\\n  - schedule "tick": `,
      ),
    );
  });
});
