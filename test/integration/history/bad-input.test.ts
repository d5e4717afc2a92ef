/**
 * Bad input to the history API (issue 25): every new option and argument is refused at once,
 * with every problem listed (INVALID_OPTIONS / INVALID_ARGUMENT), before anything reaches Redis.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import {
  DelayedError,
  Worker,
  WorkQueue,
  WorkQueueError,
  type LeasedJob,
  type MetricsKind,
  type WorkQueueOptions,
  type WorkerOptions,
} from '../../../lib/index.js';
import { countCommands, errorOf, offlineClient } from '../../support/core.js';

let offline: Redis;
let sent: ReturnType<typeof countCommands>;
let q: WorkQueue<unknown>;

beforeAll(async () => {
  offline = await offlineClient();
  sent = countCommands(offline);
  q = new WorkQueue(offline, 'checked', { logger: false });
});
afterAll(() => offline.disconnect());

/** The error's code and problems. */
async function refusal(call: () => unknown): Promise<{ code: unknown; problems: unknown }> {
  const e = await errorOf(async () => call());
  return e instanceof WorkQueueError
    ? { code: e.code, problems: e.problems }
    : { code: e, problems: [] };
}

describe('history options', () => {
  it('keepCompleted, maxLogLines and backoff.jitter: every problem at once', async () => {
    const bad = {
      keepCompleted: { count: -1, ageMs: 1.5, removeOnComplete: true },
      maxLogLines: -3,
      backoff: { type: 'fixed', delayMs: 10, jitter: 2 },
    } as unknown as WorkQueueOptions;
    const r = await refusal(() => new WorkQueue(offline, 'x', bad));
    expect(r.code).toBe('INVALID_OPTIONS');
    expect(r.problems).toEqual([
      'backoff.jitter must be a number 0..1, got 2',
      'keepCompleted: unknown option "removeOnComplete"; known: count, ageMs',
      'keepCompleted.count must be an integer 1..1000000, got -1',
      'keepCompleted.ageMs must be a positive integer (ms), got 1.5',
      'maxLogLines must be an integer 0..100000, got -3',
    ]);
    for (const k of [true, 0, 'forever', null, { count: 1 }]) {
      const e = await refusal(
        () => new WorkQueue(offline, 'x', { keepCompleted: k } as unknown as WorkQueueOptions),
      );
      expect({ k, code: e.code }).toEqual({ k, code: 'INVALID_OPTIONS' });
    }
    for (const ok of [false, { count: 1, ageMs: 1 }] as const) {
      expect(new WorkQueue(offline, 'x', { keepCompleted: ok }).options.keepCompleted.count).toBe(
        ok === false ? 0 : 1,
      );
    }
  });

  it('worker options backoffStrategy and name', async () => {
    const r = await refusal(
      () =>
        new Worker(q, () => undefined, {
          backoffStrategy: 5,
          name: '',
          autostart: false,
        } as unknown as WorkerOptions),
    );
    expect(r).toEqual({
      code: 'INVALID_OPTIONS',
      problems: [
        'backoffStrategy must be a function (attempt, error, job) => ms | undefined',
        'name must be a string of 1-100 characters, got ""',
      ],
    });
  });
});

describe('history arguments', () => {
  it('getJobLogs, getMetrics, getJobs(completed)', async () => {
    expect(await refusal(() => q.getJobLogs('', { offset: -1, limit: 0 }))).toEqual({
      code: 'INVALID_ARGUMENT',
      problems: [
        'id must be a string of 1-256 characters',
        'offset must be an integer >= 0, got -1',
        'limit must be an integer 1..1000, got 0',
      ],
    });
    expect(
      await refusal(() => q.getMetrics('all' as MetricsKind, { sinceMs: -1, untilMs: 1.5 })),
    ).toEqual({
      code: 'INVALID_ARGUMENT',
      problems: [
        'kind must be one of completed, failed, dead, got "all"',
        'sinceMs must be an integer >= 0 (Redis ms), got -1',
        'untilMs must be an integer >= 0 (Redis ms), got 1.5',
      ],
    });
    expect(await refusal(() => q.getMetrics('completed', { sinceMs: 10, untilMs: 5 }))).toEqual({
      code: 'INVALID_ARGUMENT',
      problems: ['sinceMs must not be after untilMs'],
    });
    expect((await refusal(() => q.getJobs('completed', { limit: 0 }))).code).toBe(
      'INVALID_ARGUMENT',
    );
  });

  it('changeDelay: negative or non-integer delays, invalid Dates', async () => {
    expect(await refusal(() => q.changeDelay('', -5))).toEqual({
      code: 'INVALID_ARGUMENT',
      problems: [
        'id must be a string of 1-256 characters',
        'delay must be an integer 0..90000000000000 (ms), got -5',
      ],
    });
    // Past the longest delay, or a Date past year 5138: refused, not a job due at ~never.
    for (const d of [1.5, Number.NaN, Infinity, '10', null, 1e300, 9e13 + 1, new Date(1e14)]) {
      expect((await refusal(() => q.changeDelay('a', d as number))).code).toBe('INVALID_ARGUMENT');
    }
    expect(await refusal(() => q.changeDelay('a', new Date('nope')))).toEqual({
      code: 'INVALID_ARGUMENT',
      problems: ['delay is an invalid Date'],
    });
  });

  it('updateData: bad ids, data that cannot be stored (nothing sent)', async () => {
    expect((await refusal(() => q.updateData('', 1))).code).toBe('INVALID_ARGUMENT');
    // The data's problem listed alone too (it listed none).
    expect(await refusal(() => q.updateData('a', undefined))).toEqual({
      code: 'ENCODE_FAILED',
      problems: [expect.stringMatching(/^data: data is undefined/)],
    });
    // Both at once, the data's code first (as for add): it said the id's only.
    const both = await refusal(() => q.updateData('', { n: 1n }));
    expect(both.code).toBe('ENCODE_FAILED');
    expect(both.problems).toEqual([
      expect.stringMatching(/^id /),
      expect.stringMatching(/^data: .*BigInt/i),
    ]);
    const small = new WorkQueue(offline, 'small', { logger: false, maxPayloadBytes: 10 });
    expect((await refusal(() => small.updateData('a', 'x'.repeat(20)))).code).toBe(
      'PAYLOAD_TOO_LARGE',
    );
    expect((await refusal(() => q.rerun(''))).code).toBe('INVALID_ARGUMENT');
    expect((await refusal(() => q.purgeCompleted(''))).code).toBe('INVALID_ARGUMENT');
  });

  it('DelayedError and fail delayMs: a delay that is not an integer >= 0', async () => {
    for (const d of [-1, 1.5, Number.NaN, new Date('x'), 1e300, new Date(1e14)]) {
      expect(() => new DelayedError(d)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }) as unknown as Error,
      );
    }
    expect(new DelayedError(0).delayMs).toBe(0);
    expect(new DelayedError(new Date(5)).runAt).toBe(5);
    const lease = {
      queueKey: q.keys.base,
      id: '1',
      seq: '1',
      token: '1',
      workerId: '0',
      deadline: 0,
    } as LeasedJob;
    for (const delayMs of [-1, 1e300]) {
      expect((await refusal(() => q.fail(lease, new Error('x'), { delayMs }))).code).toBe(
        'INVALID_ARGUMENT',
      );
    }
  });

  it('nothing reached Redis', () => {
    expect(sent.count).toBe(0);
  });
});
