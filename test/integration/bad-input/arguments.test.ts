/**
 * Bad arguments the other error tests (core-errors, core-payload, nest-options and
 * nest-queue-options) do not cover: queue-name edge cases, JavaScript-level misuse (what
 * TypeScript would have stopped), more bad priorities/delays/lease times, payloads whose encoding
 * throws, and well-formed leases that are forged or stale, sent to a real Redis. Each is a typed
 * `WorkQueueError` and nothing is written (or, for forged leases, nothing changes).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import {
  WorkQueue,
  WorkQueueError,
  type Lease,
  type LeasedJob,
  type WorkQueueOptions,
} from '../../../lib/index.js';
import { countCommands, errorOf, offlineClient } from '../../support/core.js';
import { keysMatching } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();

/** `{ what: code }` for each call (a resolved call is a test failure). */
async function codes(cases: Record<string, () => unknown>): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const [what, call] of Object.entries(cases)) {
    const e = await errorOf(async () => call());
    out[what] = e instanceof WorkQueueError ? e.code : e;
  }
  return out;
}

const all = (cases: Record<string, unknown>, code: string) =>
  Object.fromEntries(Object.keys(cases).map((k) => [k, code]));

describe('refused before anything reaches Redis', () => {
  let offline: Redis;
  let sent: ReturnType<typeof countCommands>;
  let q: WorkQueue<unknown>;

  beforeAll(async () => {
    offline = await offlineClient();
    sent = countCommands(offline);
    q = new WorkQueue(offline, 'checked', { logger: false });
  });
  afterAll(() => offline.disconnect());

  it('queue names: 1-100 of [A-Za-z0-9._:-]; ":" is fine, braces, globs, spaces and 101 chars are not', async () => {
    for (const ok of ['a', 'a:b:c', 'orders.v2', 'x_y-z', 'Q'.repeat(100), '0']) {
      const queue = new WorkQueue(offline, ok, { logger: false });
      expect(queue.keys.base).toBe(`wq:{${ok}}:`);
    }
    const bad: Record<string, unknown> = {
      '101 chars': 'q'.repeat(101),
      '10 000 chars': 'q'.repeat(10_000),
      'open brace': 'a{b',
      'close brace': 'b}',
      'hash tag': '{x}',
      empty: '',
      space: 'a b',
      newline: 'a\nb',
      glob: 'a*',
      question: 'a?',
      'non-ASCII': 'café',
      number: 42,
      undefined: undefined,
      null: null,
      object: { name: 'x' },
    };
    const got = await codes(
      Object.fromEntries(
        Object.entries(bad).map(([k, v]) => [k, () => new WorkQueue(offline, v as string)]),
      ),
    );
    expect(got).toEqual(all(bad, 'INVALID_OPTIONS'));
    const prefixes = await codes({
      'prefix 101 chars': () => new WorkQueue(offline, 'ok', { prefix: 'p'.repeat(101) }),
      'prefix with brace': () => new WorkQueue(offline, 'ok', { prefix: 'p{' }),
      'prefix empty': () => new WorkQueue(offline, 'ok', { prefix: '' }),
    });
    expect(Object.values(prefixes)).toEqual(Array(3).fill('INVALID_OPTIONS'));
    expect(sent.count).toBe(0);
  });

  it('every problem of the options is listed, one per entry', async () => {
    const e = (await errorOf(
      () =>
        new WorkQueue(offline, 'x'.repeat(101), {
          prefix: 'a}',
          leaseMs: 0,
          maxAttempts: -1,
          maxPayloadBytes: 1.5,
          heartbeatTimeoutMs: Number.NaN,
          backoff: { type: 'linear', delayMs: -1 },
          storeResults: { ttlMs: 0 },
          logger: { info: () => undefined },
        } as unknown as WorkQueueOptions),
    )) as WorkQueueError;
    expect(e.code).toBe('INVALID_OPTIONS');
    expect(e.problems).toHaveLength(10);
    expect(e.message.split('\n').slice(1)).toEqual(e.problems.map((p) => `  - ${p}`));
    for (const word of [
      'queue name',
      'prefix',
      'leaseMs',
      'maxAttempts',
      'maxPayloadBytes',
      'heartbeatTimeoutMs',
      'backoff.type',
      'backoff.delayMs',
      'storeResults',
      'logger',
    ]) {
      expect(e.problems.some((p) => p.startsWith(word))).toBe(true);
    }
    expect(sent.count).toBe(0);
  });

  it('add: bad priorities, delays, run times, names, ids, attempts, backoffs', async () => {
    const cases = {
      'priority NaN': () => q.add(1, { priority: Number.NaN }),
      'priority null': () => q.add(1, { priority: null as unknown as number }),
      'priority 9.5': () => q.add(1, { priority: 9.5 }),
      'priority Infinity': () => q.add(1, { priority: Infinity }),
      'delayMs Infinity': () => q.add(1, { delayMs: Infinity }),
      'delayMs NaN': () => q.add(1, { delayMs: Number.NaN }),
      'delayMs "100"': () => q.add(1, { delayMs: '100' as unknown as number }),
      'runAt "tomorrow"': () => q.add(1, { runAt: 'tomorrow' as unknown as number }),
      'runAt invalid Date': () => q.add(1, { runAt: new Date('not a date') }),
      'runAt Infinity': () => q.add(1, { runAt: Infinity }),
      'delayMs and runAt': () => q.add(1, { delayMs: 5, runAt: Date.now() }),
      'name ""': () => q.add(1, { name: '' }),
      'name 201 chars': () => q.add(1, { name: 'n'.repeat(201) }),
      'name 42': () => q.add(1, { name: 42 as unknown as string }),
      'id 42': () => q.add(1, { id: 42 as unknown as string }),
      'id 257 chars': () => q.add(1, { id: 'i'.repeat(257) }),
      'maxAttempts "3"': () => q.add(1, { maxAttempts: '3' as unknown as number }),
      'maxAttempts Infinity': () => q.add(1, { maxAttempts: Infinity }),
      'backoff "fast"': () => q.add(1, { backoff: 'fast' as never }),
      'backoff linear': () => q.add(1, { backoff: { type: 'linear', delayMs: 1 } as never }),
      'backoff delay -1': () => q.add(1, { backoff: { type: 'fixed', delayMs: -1 } }),
      'options "x"': () => q.add(1, 'x' as never),
    };
    expect(await codes(cases)).toEqual(all(cases, 'INVALID_ARGUMENT'));
    // Several problems of one job: all listed.
    const e = (await errorOf(
      q.add(1, { priority: 11, delayMs: -1, name: '', maxAttempts: 0 }),
    )) as WorkQueueError;
    expect(e.problems).toHaveLength(4);
    expect(sent.count).toBe(0);
  });

  it('JavaScript-level misuse (what TypeScript stops) is a typed error too, not a TypeError', async () => {
    const cases = {
      'addBulk(null entry)': () => q.addBulk([null as never]),
      'addBulk("x")': () => q.addBulk('x' as never),
      'addBulk(undefined)': () => q.addBulk(undefined as never),
      'completeAndLease(null)': () => q.completeAndLease(null as never),
      'completeAndLease([null])': () => q.completeAndLease([null as never]),
      'release(null)': () => q.release(null as never),
      'extend(undefined)': () => q.extend(undefined as never),
      'fail(undefined lease)': () => q.fail(undefined as never, new Error('x')),
      'progress(lease, undefined)': () =>
        q.progress(
          { queueKey: q.keys.base, seq: '1', token: '1', workerId: '0' } as Lease,
          undefined,
        ),
      'cancel(42)': () => q.cancel(42 as never),
      'getJob(undefined)': () => q.getJob(undefined as never),
      'retryDead("")': () => q.retryDead(''),
      'purgeDead(257 chars)': () => q.purgeDead('x'.repeat(257)),
      'listDead limit 0': () => q.listDead({ limit: 0 }),
      'listDead offset -1': () => q.listDead({ offset: -1 }),
      'listDead limit 10001': () => q.listDead({ limit: 10_001 }),
      'cleanIfDue NaN': () => q.cleanIfDue(Number.NaN, 'me'),
      'cleanIfDue -5': () => q.cleanIfDue(-5, 'me'),
      'cleanIfDue 0.5': () => q.cleanIfDue(0.5, 'me'),
      'cleanIfDue no owner': () => q.cleanIfDue(1000, undefined as never),
      'cleanIfDue object owner': () => q.cleanIfDue(1000, {} as never),
      'lease count 10001': () => q.lease({ count: 10_001 }),
      'lease count "5"': () => q.lease({ count: '5' as unknown as number }),
      'lease leaseMs Infinity': () => q.lease({ leaseMs: Infinity }),
      'lease leaseMs "1000"': () => q.lease({ leaseMs: '1000' as unknown as number }),
      'extend NaN': () => q.extend([], Number.NaN),
      'extend Infinity': () => q.extend([], Infinity),
    };
    const got = await codes(cases);
    for (const [what, code] of Object.entries(got)) {
      expect({ what, code }).toEqual({ what, code: 'INVALID_ARGUMENT' });
    }
    expect(sent.count).toBe(0);
  });

  it('payloads whose encoding throws: ENCODE_FAILED, nothing sent', async () => {
    class Secretive {
      toJSON(): never {
        throw new Error('toJSON refuses');
      }
    }
    const getter = Object.defineProperty({}, 'boom', {
      enumerable: true,
      get() {
        throw new Error('getter refuses');
      },
    });
    const deep: Record<string, unknown> = { level: 0 };
    let cur = deep;
    for (let i = 1; i < 50; i++) {
      const next: Record<string, unknown> = { level: i };
      cur.next = next;
      cur = next;
    }
    cur.big = 12345678901234567890n;
    const cases = {
      'toJSON throws': () => q.add(new Secretive()),
      'getter throws': () => q.add(getter),
      'BigInt 50 levels down': () => q.add(deep),
      'bulk: one of 3 throws': () =>
        q.addBulk([{ data: 1 }, { data: new Secretive() }, { data: 3 }]),
      'progress BigInt': () =>
        q.progress({ queueKey: q.keys.base, seq: '1', token: '1', workerId: '0' } as Lease, 1n),
    };
    expect(await codes(cases)).toEqual(all(cases, 'ENCODE_FAILED'));
    const e = (await errorOf(q.add(new Secretive()))) as WorkQueueError;
    expect(e.message).toMatch(/toJSON refuses/);
    expect(sent.count).toBe(0);
  });
});

describe('forged and stale leases against a real Redis: refused, nothing changes', () => {
  afterAll(() => fx.cleanup());

  /** Every key of the queue with its full contents. */
  async function state(c: Redis, q: WorkQueue<unknown>) {
    const out: Record<string, unknown> = {};
    for (const key of await keysMatching(c, `${q.keys.base}*`)) {
      const type = await c.type(key);
      out[key] =
        type === 'hash'
          ? await c.hgetall(key)
          : type === 'zset'
            ? await c.zrange(key, '0', '-1', 'WITHSCORES')
            : type === 'list'
              ? await c.lrange(key, 0, -1)
              : type === 'set'
                ? (await c.smembers(key)).sort()
                : type === 'stream'
                  ? await c.xrange(key, '-', '+')
                  : await c.get(key);
    }
    return out;
  }

  it('wrong token, wrong worker, another job, a guessed token: complete/fail/release/extend/progress lose', async () => {
    const q = fx.queue<unknown>();
    const c = fx.client();
    const w = await q.registerWorker();
    await q.addBulk([{ data: 'a' }, { data: 'b' }, { data: 'c' }]);
    const [held, other] = (await q.lease({ count: 2, leaseMs: 60_000, workerId: w })) as [
      LeasedJob<unknown>,
      LeasedJob<unknown>,
    ];
    const forge = (over: Partial<Lease>): Lease => ({ ...held, ...over });
    const forged: Record<string, Lease> = {
      'wrong token': forge({ token: String(Number(held.token) + 1000) }),
      'token of another lease': forge({ token: other.token }),
      'wrong worker': forge({ workerId: String(Number(w) + 1) }),
      'no worker': forge({ workerId: '0' }),
      'pending job, guessed token': forge({ seq: '3', id: '3', token: '1' }),
      'unknown job': forge({ seq: '999', id: '999' }),
    };
    const before = await state(c, q);
    const outcomes: Record<string, unknown[]> = {};
    for (const [what, lease] of Object.entries(forged)) {
      outcomes[what] = [
        await q.fail(lease, new Error('forged')),
        await q.release(lease),
        await q.extend(lease, 120_000),
        await q.progress(lease, 0.5),
      ];
    }
    expect(outcomes).toEqual(
      Object.fromEntries(Object.keys(forged).map((k) => [k, ['lost', [false], [false], false]])),
    );
    expect(await state(c, q)).toEqual(before);
    // complete() is the exception by design: a stale holder's complete finishes the job while
    // that incarnation exists (the work is saved), and a stale token cannot be told from a
    // forged one. A lease of a job that does not exist changes nothing.
    expect(await q.complete(forged['unknown job']!)).toBe(false);
    expect(await state(c, q)).toEqual(before);
    // The real holder is unaffected.
    expect(await q.extend(held, 60_000)).toEqual([true]);
    expect(await q.complete(held)).toBe(true);
  });
});
