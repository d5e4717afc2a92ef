/**
 * Typed errors for what is refused before touching Redis: bad options, arguments and leases
 * (no command sent), and timer options longer than a Node timer waits. (What Redis itself
 * says at start-up: redis-checks.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import {
  Worker,
  WorkQueue,
  WorkQueueError,
  type Lease,
  type LeasedJob,
} from '../../../lib/index.js';
import { countCommands, errorOf, offlineClient } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { codeOf } from './support.js';

const fx = new QueueFixture();

describe('typed errors, refused before touching Redis', () => {
  let offline: Redis;
  let sent: ReturnType<typeof countCommands>;
  let qo: WorkQueue<unknown>;
  let foreign: LeasedJob<unknown>;

  beforeAll(async () => {
    // A real lease of another queue (on the shared Redis).
    const other = fx.queue<unknown>();
    await other.add('x');
    [foreign] = (await other.lease({ leaseMs: 60_000 })) as [LeasedJob<unknown>];
    // The queue under test can never reach Redis: anything that touches Redis fails with
    // REDIS_UNAVAILABLE, and every command it sends is counted.
    offline = await offlineClient();
    sent = countCommands(offline);
    qo = new WorkQueue(offline, 'checked', { logger: false });
  });
  afterAll(async () => {
    offline.disconnect();
    await fx.cleanup();
  });

  /** A well-formed lease of `qo`. */
  const lease = (over: Partial<Record<keyof Lease, unknown>> = {}): Lease =>
    ({
      queueKey: qo.keys.base,
      id: '1',
      seq: '1',
      token: '7',
      workerId: '0',
      deadline: 0,
      ...over,
    }) as Lease;

  it('invalid queue names and options: INVALID_OPTIONS listing every problem', async () => {
    for (const name of ['a{b', 'a}b', '{tag}', '', 'has space']) {
      const e = await errorOf(() => new WorkQueue(offline, name));
      expect(e).toBeInstanceOf(WorkQueueError);
      expect((e as WorkQueueError).code).toBe('INVALID_OPTIONS');
    }
    const e = (await errorOf(
      () => new WorkQueue(offline, 'ok', { leaseMs: -1, maxAttempts: 1.5, codec: 'xml' as 'json' }),
    )) as WorkQueueError;
    expect(e.code).toBe('INVALID_OPTIONS');
    expect(e.problems).toHaveLength(3);
    expect(e.problems.join('\n')).toMatch(/leaseMs/);
    expect(e.problems.join('\n')).toMatch(/maxAttempts/);
    expect(e.problems.join('\n')).toMatch(/codec/);
    const two = (await errorOf(
      () => new WorkQueue(offline, 'bad{', { prefix: 'p}' }),
    )) as WorkQueueError;
    expect(two.problems.length).toBeGreaterThan(1);
    expect(sent.count).toBe(0);
  });

  it('invalid add arguments: INVALID_ARGUMENT with no command sent', async () => {
    const cases: Record<string, Promise<unknown>> = {
      'priority 10': qo.add(1, { priority: 10 }),
      'priority -1': qo.add(1, { priority: -1 }),
      'priority 1.5': qo.add(1, { priority: 1.5 }),
      'priority "1"': qo.add(1, { priority: '1' as unknown as number }),
      'delayMs -5': qo.add(1, { delayMs: -5 }),
      'delayMs 1.5': qo.add(1, { delayMs: 1.5 }),
      'runAt NaN': qo.add(1, { runAt: Number.NaN }),
      'all-digit id': qo.add(1, { id: '12345' }),
      'empty id': qo.add(1, { id: '' }),
      'maxAttempts 0': qo.add(1, { maxAttempts: 0 }),
      'bulk with one bad': qo.addBulk([{ data: 1 }, { data: 2, opts: { priority: 99 } }]),
      // BullMQ's entry shape: its top-level name was dropped without a word.
      'bulk { name, data }': qo.addBulk([{ name: 'render', data: 1 } as never]),
    };
    const codes: Record<string, unknown> = {};
    for (const [what, p] of Object.entries(cases)) codes[what] = await codeOf(p);
    expect(codes).toEqual(
      Object.fromEntries(Object.keys(cases).map((k) => [k, 'INVALID_ARGUMENT'])),
    );
    expect(
      ((await errorOf(qo.addBulk([{ name: 'render', data: 1 } as never]))) as WorkQueueError)
        .problems,
    ).toEqual([
      `unknown field "name" (BullMQ's { name, data, opts } is { data, opts: { name } } here); an entry is { data, opts? }`,
    ]);
    expect(sent.count).toBe(0);
  });

  it('numbers past what a job can be due at or count: every problem listed, no command sent', async () => {
    // 1e300 is an integer to JavaScript: it was stored as a job due at ~never (and an `at` that
    // no Date can hold). Delays stop at 9e13 ms, times at 1e14 (year 5138), counts at 2^53 - 1.
    const e = (await errorOf(
      qo.add(1, {
        delayMs: 1e300,
        maxAttempts: 2 ** 53,
        backoff: { type: 'exponential', delayMs: 9e13 + 1, maxDelayMs: 1e300 },
      }),
    )) as WorkQueueError;
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.problems).toEqual([
      'delayMs must be an integer 0..90000000000000 (ms), got 1e+300',
      'maxAttempts must be a positive integer, got 9007199254740992',
      'backoff.delayMs must be an integer 0..90000000000000 (ms), got 90000000000001',
      'backoff.maxDelayMs must be an integer 1..90000000000000 (ms), got 1e+300',
    ]);
    for (const runAt of [1e14, 8.64e15, new Date(8.64e15), -1e300]) {
      expect(((await errorOf(qo.add(1, { runAt }))) as WorkQueueError).problems).toEqual([
        expect.stringMatching(/^runAt must be a valid Date or ms timestamp before 100000000000000/),
      ]);
    }
    expect(await codeOf(qo.changeDelay('a', 9e13 + 1))).toBe('INVALID_ARGUMENT');
    expect(sent.count).toBe(0);
  });

  it('invalid lease/extend arguments: INVALID_ARGUMENT with no command sent', async () => {
    const cases: Record<string, Promise<unknown>> = {
      'leaseMs 0': qo.lease({ leaseMs: 0 }),
      'leaseMs -100': qo.lease({ leaseMs: -100 }),
      'leaseMs 1.5': qo.lease({ leaseMs: 1.5 }),
      'count 0': qo.lease({ count: 0, leaseMs: 100 }),
      'workerId forged': qo.lease({ leaseMs: 100, workerId: 'w; x' }),
      'extend 0': qo.extend(lease(), 0),
      'extend -5': qo.extend(lease(), -5),
      'getJob empty id': qo.getJob(''),
      'cancel empty id': qo.cancel(''),
    };
    const codes: Record<string, unknown> = {};
    for (const [what, p] of Object.entries(cases)) codes[what] = await codeOf(p);
    expect(codes).toEqual(
      Object.fromEntries(Object.keys(cases).map((k) => [k, 'INVALID_ARGUMENT'])),
    );
    expect(sent.count).toBe(0);
  });

  it('a lease of another queue: FOREIGN_LEASE with no command sent', async () => {
    expect(foreign.queueKey).not.toBe(qo.keys.base);
    const codes = {
      complete: await codeOf(qo.complete(foreign)),
      fail: await codeOf(qo.fail(foreign, new Error('x'))),
      release: await codeOf(qo.release(foreign)),
      extend: await codeOf(qo.extend(foreign, 1_000)),
      progress: await codeOf(qo.progress(foreign, 0.5)),
      'extend, mixed with own': await codeOf(qo.extend([lease(), foreign], 1_000)),
    };
    expect(codes).toEqual({
      complete: 'FOREIGN_LEASE',
      fail: 'FOREIGN_LEASE',
      release: 'FOREIGN_LEASE',
      extend: 'FOREIGN_LEASE',
      progress: 'FOREIGN_LEASE',
      'extend, mixed with own': 'FOREIGN_LEASE',
    });
    expect(sent.count).toBe(0);
  });

  it('a forged or malformed lease: INVALID_ARGUMENT with no command sent', async () => {
    const forged: Record<string, unknown> = {
      null: null,
      'not an object': 'lease',
      'empty object': {},
      'token not a number': lease({ token: '1 or 1' }),
      'seq not a number': lease({ seq: '1:2' }),
      'workerId not a number': lease({ workerId: '*' }),
      'seq missing': lease({ seq: undefined }),
    };
    const codes: Record<string, unknown> = {};
    for (const [what, l] of Object.entries(forged)) {
      const asLease = l as Lease;
      codes[what] = [
        await codeOf(qo.complete(asLease)),
        await codeOf(qo.fail(asLease, new Error('x'))),
        await codeOf(qo.release(asLease)),
        await codeOf(qo.extend(asLease, 1_000)),
        await codeOf(qo.progress(asLease, 1)),
      ];
    }
    const all = Array(5).fill('INVALID_ARGUMENT');
    expect(codes).toEqual(Object.fromEntries(Object.keys(forged).map((k) => [k, all])));
    // Its problems list what is wrong, as every INVALID_ARGUMENT's does (it was empty).
    const e = (await errorOf(() => qo.release({} as Lease))) as WorkQueueError;
    expect(e.problems).toEqual(['not a lease (use a lease returned by lease())']);
    expect(sent.count).toBe(0);
  });

  it('(control) a valid call on the same queue does reach for Redis and fails REDIS_UNAVAILABLE', async () => {
    expect(await codeOf(qo.add('fine'))).toBe('REDIS_UNAVAILABLE');
    expect(await codeOf(qo.complete(lease()))).toBe('REDIS_UNAVAILABLE');
    // null options are no options (as for getJobs): no TypeError.
    expect(await codeOf(qo.listDead(null as never))).toBe('REDIS_UNAVAILABLE');
    expect(sent.count).toBeGreaterThan(0);
  });
});

describe('timer options longer than a Node timer waits are refused', () => {
  it('queue and worker options over 2 147 483 647 ms: INVALID_OPTIONS naming each', async () => {
    const c = await offlineClient();
    try {
      const big = 2_147_483_648;
      const qe = (await errorOf(
        () => new WorkQueue(c, 'timers', { leaseMs: big, commandTimeoutMs: big }),
      )) as WorkQueueError;
      expect(qe.code).toBe('INVALID_OPTIONS');
      expect(qe.problems).toEqual([
        expect.stringMatching(/^leaseMs must be at most 2147483647/),
        expect.stringMatching(/^commandTimeoutMs must be at most 2147483647/),
      ]);
      const q = new WorkQueue(c, 'timers', { logger: false });
      const we = (await errorOf(
        () =>
          new Worker(q, () => undefined, {
            jobTimeoutMs: big,
            idleTimeoutMs: big,
            cleanIntervalMs: big,
          }),
      )) as WorkQueueError;
      expect(we.code).toBe('INVALID_OPTIONS');
      expect(we.problems).toEqual([
        expect.stringMatching(/^jobTimeoutMs must be at most 2147483647/),
        expect.stringMatching(/^idleTimeoutMs must be at most 2147483647/),
        expect.stringMatching(/^cleanIntervalMs must be at most 2147483647/),
      ]);
      // The longest accepted.
      expect(() => new Worker(q, () => undefined, { jobTimeoutMs: big - 1 })).not.toThrow();
    } finally {
      c.disconnect();
    }
  });
});
