/**
 * Options the calls did not check (a probe found them accepted): unknown keys inside backoff,
 * rate limits, storeResults and keepCompleted, page options, fail and the drain/obliterate flags;
 * argument types of fail, deadLetter, drain, obliterate and retryDead; lease and extend lengths past the
 * time bound. Each is refused with every problem listed (INVALID_ARGUMENT or INVALID_OPTIONS),
 * and nothing changes in Redis.
 */
import { afterAll, expect, it } from '@jest/globals';
import { WorkQueue, type AddOptions, type WorkQueueOptions } from '../../../lib/index.js';
import { errorOf, problemsOf } from '../../support/core.js';
import { keysButCounters, QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

const problems = problemsOf;

it('unknown keys inside nested options are refused, with hints for BullMQ names', async () => {
  const q = fx.queue<string>();
  expect(
    await problems(() =>
      q.add('x', { backoff: { type: 'fixed', delayMs: 10, delay: 5 } } as unknown as AddOptions),
    ),
  ).toEqual([
    `backoff: unknown option "delay" (BullMQ's delay is delayMs here); known: type, delayMs, maxDelayMs, jitter`,
  ]);
  expect(
    await problems(
      () =>
        new WorkQueue(fx.client(), 'strict', {
          limiter: { max: 1, durationMs: 1000, duration: 1 },
          storeResults: { ttlMs: 10, ttl: 5 },
          keepCompleted: { count: 10, ageMs: 10, age: 1 },
        } as unknown as WorkQueueOptions),
    ),
  ).toEqual([
    `keepCompleted: unknown option "age" (BullMQ's age (s) is ageMs here); known: count, ageMs`,
    `limiter: unknown option "duration" (BullMQ's duration is durationMs here); known: max, durationMs`,
    'storeResults: unknown option "ttl"; known: ttlMs',
  ]);
  expect(
    await problems(() => q.setRateLimit({ max: 1, durationMs: 100, foo: 1 } as never)),
  ).toEqual(['rate limit: unknown option "foo"; known: max, durationMs']);
  expect(await problems(() => q.getJobs('pending', { foo: 1 } as never))).toEqual([
    'unknown option "foo"; known: offset, limit, group',
  ]);
  expect(await problems(() => q.getGroups({ page: 2 } as never))).toEqual([
    'unknown option "page"; known: offset, limit',
  ]);
  expect(await q.counts()).toMatchObject({ pending: 0 });
});

it('drain and obliterate take booleans; fail and deadLetter check their arguments', async () => {
  const q = fx.queue<string>();
  await q.add('a');
  await q.add('b', { delayMs: 60_000 });
  expect(await problems(() => q.drain({ delayed: 'yes' } as never))).toEqual([
    'drain delayed must be a boolean, got "yes"',
  ]);
  expect(await problems(() => q.obliterate({ force: 'yes', all: true } as never))).toEqual([
    'obliterate options: unknown option "all"; known: force',
    'obliterate force must be a boolean, got "yes"',
  ]);
  expect(await q.counts()).toMatchObject({ pending: 1, delayed: 1 });
  const [lease] = await q.lease();
  expect(
    await problems(() => q.fail(lease!, new Error('x'), { retryable: 'no', foo: 1 } as never)),
  ).toEqual([
    'fail options: unknown option "foo"; known: delayMs, retryable',
    'fail retryable must be a boolean, got "no"',
  ]);
  expect(await problems(() => q.deadLetter(lease!, 5 as never))).toEqual([
    'deadLetter reason must be a string, got 5',
  ]);
  expect(await q.getJob(lease!.id)).toMatchObject({ state: 'leased', attemptsMade: 0 });
  // A reason is kept as long as a failed attempt's error.
  expect(await q.deadLetter(lease!, 'r'.repeat(100_000))).toBe('dead');
  expect((await q.getJob(lease!.id))!.deadReason).toHaveLength(2000);
  // A failed attempt's error: 2 000 characters, the last one '…' (it kept 2 001).
  const { id } = await q.add('b');
  const [b] = await q.lease();
  expect(await q.fail(b!, new Error('e'.repeat(100_000)))).toBe('retried');
  const lastError = (await q.getJob(id))!.lastError!;
  expect([lastError.length, lastError.at(-1)]).toEqual([2000, '…']);
});

it('lease and extend lengths are bounded by the time bound (9e13 ms)', async () => {
  const q = fx.queue<string>();
  await q.add('a');
  expect(await problems(() => q.lease({ leaseMs: 2 ** 53 - 1 }))).toEqual([
    `leaseMs must be an integer 1..90000000000000, got ${2 ** 53 - 1}`,
  ]);
  const [lease] = await q.lease({ leaseMs: 9e13 });
  expect(lease!.deadline).toBeGreaterThan(9e13);
  expect(await problems(() => q.extend(lease!, 9e13 + 1))).toEqual([
    'extend ms must be an integer 1..90000000000000, got 90000000000001',
  ]);
  expect(await q.extend(lease!, 1_000)).toEqual([true]);
});

it('a caller id window and a result TTL are bounded by the time bound too (1e19 overflowed the id record)', async () => {
  expect(
    await problems(
      () =>
        new WorkQueue(fx.client(), 'q', { dedupeWindowMs: 1e19, storeResults: { ttlMs: 2 ** 53 } }),
    ),
  ).toEqual([
    'dedupeWindowMs must be an integer 0..90000000000000, got 10000000000000000000',
    'storeResults must be false or { ttlMs: an integer 1..90000000000000 }',
  ]);
  // At the bound: the id stays taken, the job reads back completed with its result.
  const q = fx.queue<string, string>({ dedupeWindowMs: 9e13, storeResults: { ttlMs: 9e13 } });
  await q.add('a', { id: 'c-1' });
  const [lease] = await q.lease();
  expect(await q.complete(lease!, 'done')).toBe(true);
  expect(await q.getJob('c-1')).toMatchObject({ state: 'completed', result: 'done' });
  expect(await q.getResult('c-1')).toBe('done');
  expect(await q.add('b', { id: 'c-1' })).toMatchObject({ added: false });
});

it('retryDead takes an id or exactly { all: true }', async () => {
  const q = fx.queue<string>();
  await q.add('x', { maxAttempts: 1 });
  const [lease] = await q.lease();
  expect(await q.fail(lease!, new Error('boom'))).toBe('dead');
  expect(await problems(() => q.retryDead({ all: true, x: 1 } as never))).toEqual([
    'retryDead options: unknown option "x"; known: all',
  ]);
  expect(await problems(() => q.retryDead({ all: 'y' } as never))).toEqual([
    'retryDead takes a job id or { all: true }, got all: "y"',
  ]);
  expect((await q.counts()).dead).toBe(1);
  expect(await q.retryDead({ all: true })).toBe(1);
});

it('ids and group names with a lone UTF-16 surrogate are refused (they would be stored as U+FFFD)', async () => {
  const q = fx.queue<string>({ groups: { concurrency: 1 } });
  expect(await problems(() => q.add('x', { id: 'a\uD800', group: 'g\uDBFF' }))).toEqual([
    'group "g\\udbff" has a lone UTF-16 surrogate: it cannot be stored as UTF-8',
    'id "a\\ud800" has a lone UTF-16 surrogate: it cannot be stored as UTF-8',
  ]);
  expect(await problems(() => q.getJob('a\uDC00'))).toEqual([
    'id "a\\udc00" has a lone UTF-16 surrogate: it cannot be stored as UTF-8',
  ]);
  // Names and schedule ids too (a name is in the job's metadata, a schedule id in its ticks' ids).
  expect(await problems(() => q.add('x', { name: 'send\uD800' }))).toEqual([
    'name "send\\ud800" has a lone UTF-16 surrogate: it cannot be stored as UTF-8',
  ]);
  expect(
    await problems(() =>
      q.upsertSchedule('s\uDC01', { every: 1_000 }, { data: 'x', name: 'n\uD801' }),
    ),
  ).toEqual([
    'schedule id "s\\udc01" has a lone UTF-16 surrogate: it cannot be stored as UTF-8',
    'template: name "n\\ud801" has a lone UTF-16 surrogate: it cannot be stored as UTF-8',
  ]);
  expect(await keysButCounters(fx.client(), q)).toEqual([]);
  // A well-formed pair (an emoji) is fine.
  expect((await q.add('y', { id: 'a\uD83D\uDE00', group: 'g\uD83D\uDE00' })).added).toBe(true);
  expect((await q.getJob('a\uD83D\uDE00'))?.group).toBe('g\uD83D\uDE00');
  const s = fx.queue<string>({ codec: 'string' });
  const e = await errorOf(() => s.add('x\uDC00'));
  expect(e).toMatchObject({ code: 'ENCODE_FAILED' });
  expect((e as Error).message).not.toContain('x\uDC00');
  expect((await s.counts()).pending).toBe(0);
});

it('lease options, listDead offsets and progress sizes are checked as documented', async () => {
  const q = fx.queue<string>();
  expect(await problems(() => q.lease({ cnt: 3 } as never))).toEqual([
    'lease: unknown option "cnt"; known: count, leaseMs, workerId',
  ]);
  expect(await problems(() => q.listDead({ offset: 2 ** 53 }))).toEqual([
    'offset must be an integer >= 0, got 9007199254740992',
  ]);
  await q.add('x');
  const [lease] = await q.lease();
  // 64 KiB of UTF-8: 21 846 '€' are 65 538 bytes (21 846 characters).
  expect(await problems(() => q.progress(lease!, '€'.repeat(21_846)))).toEqual([
    expect.stringMatching(/64 KiB/),
  ]);
  expect(await q.progress(lease!, '€'.repeat(21_000))).toBe(true);
  // Not a finite number: refused (JSON stored it as null), the last progress kept.
  for (const bad of [NaN, Infinity, -Infinity])
    expect(await problems(() => q.progress(lease!, bad))).toEqual([
      `progress must be a finite number (e.g. 0…1) or a JSON value, got ${bad}`,
    ]);
  expect((await q.getJob(lease!.id))?.progress).toBe('€'.repeat(21_000));
});
