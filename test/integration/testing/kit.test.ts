// The testing kit's helpers for any test (nestjs-work-queue/testing): uniquePrefix, whenIdle,
// removeKeys, on the shared test Redis.
import net from 'node:net';
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { FlowProducer, WorkQueue, WorkQueueError, type Job } from '../../../lib/index.js';
import { removeKeys, uniquePrefix, whenIdle } from '../../../src/testing/index.js';
import { errorOf } from '../../support/core.js';
import { keysMatching, testRedisUrl, uniqueName } from '../../support/keys.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const redis = new Redis(testRedisUrl());
const prefixes: string[] = [];
afterAll(async () => {
  for (const p of prefixes) await removeKeys(redis, p);
  redis.disconnect();
});
const worker = workersClosedAfterEach();

/** A queue on a prefix of its own (its keys removed after the file). */
function queue<T>(options: ConstructorParameters<typeof WorkQueue>[2] = {}): WorkQueue<T> {
  const prefix = uniquePrefix('kit');
  prefixes.push(prefix);
  return new WorkQueue<T>(redis, uniqueName(), { logger: false, prefix, ...options });
}

function invalid(e: unknown): { code: string; problems: readonly string[] } {
  expect(e).toBeInstanceOf(WorkQueueError);
  const { code, problems } = e as WorkQueueError;
  return { code, problems };
}

describe('uniquePrefix', () => {
  it('gives a different prefix each call, one a queue accepts, with the label first', () => {
    const seen = new Set(Array.from({ length: 10_000 }, () => uniquePrefix()));
    expect(seen.size).toBe(10_000);
    const p = uniquePrefix('orders.e2e');
    expect(p).toMatch(/^orders\.e2e-[0-9a-f]{12}$/);
    expect(new WorkQueue(redis, 'q', { prefix: p }).keys.pending(0)).toBe(`${p}:{q}:p0`);
    expect(uniquePrefix()).toMatch(/^test-[0-9a-f]{12}$/);
  });

  it('refuses a label that would not make a valid prefix', async () => {
    for (const label of ['', 'a b', 'x{y}', 'l'.repeat(81), 42]) {
      const e = invalid(await errorOf(() => uniquePrefix(label as string)));
      expect(e.code).toBe('INVALID_ARGUMENT');
      expect(e.problems).toHaveLength(1);
      // (It quoted a prefix's limit, 100, for the label's 80.)
      expect(e.problems[0]).toMatch(/must be (1-80 characters|at most 80 characters)/);
    }
  });
});

describe('whenIdle', () => {
  it('resolves once every job ran, retries included (delayed between attempts)', async () => {
    const q = queue<{ n: number }>({ backoff: { type: 'fixed', delayMs: 30 } });
    const runs: number[] = [];
    worker(q, async (job: Job<{ n: number }>) => {
      runs.push(job.data.n);
      if (job.data.n === 0 && job.attempt < 3) throw new Error('not yet');
    });
    await q.addBulk([0, 1, 2, 3, 4].map((n) => ({ data: { n } })));
    const counts = await whenIdle(q, { timeoutMs: 10_000 });
    expect(counts).toMatchObject({ pending: 0, delayed: 0, leased: 0, dead: 0 });
    // Idle only after the third attempt of job 0, which failed twice.
    expect(runs.filter((n) => n === 0)).toHaveLength(3);
    expect([...new Set(runs)].sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it('counts a dead-lettered job as done: idle, with the dead count', async () => {
    const q = queue({ maxAttempts: 1 });
    worker(q, async () => {
      throw new Error('always');
    });
    await q.add({});
    expect(await whenIdle(q, { timeoutMs: 10_000 })).toMatchObject({ pending: 0, dead: 1 });
  });

  it('resolves at once for an empty queue', async () => {
    expect(await whenIdle(queue(), { timeoutMs: 1_000 })).toMatchObject({
      pending: 0,
      delayed: 0,
      leased: 0,
    });
  });

  it('cancelled and replaced jobs are done: idle while nothing leases their entries away', async () => {
    // (Their pending-list entries count in counts().pending until a lease skips them: it timed
    // out with "1 pending" when no worker ran.)
    const q = queue();
    const a = await q.add({ n: 1 });
    await q.add({ n: 2 }, { priority: 0 });
    await q.add({ n: 3 }, { id: 'debounced', dedupe: { ttlMs: 60_000, replace: true } });
    await q.add({ n: 4 }, { id: 'debounced', dedupe: { ttlMs: 60_000, replace: true } });
    expect(await q.cancel(a.id)).toBe(true);
    const e = await errorOf(whenIdle(q, { timeoutMs: 100 }));
    expect((e as WorkQueueError).code).toBe('TIMEOUT');
    expect((e as Error).message).toContain('2 pending');
    const [second, fourth] = await q.getJobs('pending', { limit: 10 });
    expect(await q.cancel(second!.id)).toBe(true);
    expect(await q.cancel(fourth!.id)).toBe(true);
    expect((await q.counts()).pending).toBeGreaterThan(0);
    expect(await whenIdle(q, { timeoutMs: 5_000 })).toMatchObject({
      pending: 0,
      pendingByPriority: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    });
  });

  it("reads a queue's own counts() when a test replaced it (a spy, a subclass)", async () => {
    const q = queue();
    await q.add({});
    const idle = { ...(await q.counts()), pending: 0, pendingByPriority: Array(10).fill(0) };
    q.counts = () => Promise.resolve(idle);
    expect(await whenIdle(q, { timeoutMs: 1_000 })).toBe(idle);
  });

  it('rejects with TIMEOUT, naming what it saw, while a job is delayed', async () => {
    const q = queue();
    await q.add({}, { delayMs: 60_000 });
    const e = await errorOf(whenIdle(q, { timeoutMs: 200, intervalMs: 10 }));
    expect(e).toBeInstanceOf(WorkQueueError);
    expect((e as WorkQueueError).code).toBe('TIMEOUT');
    expect((e as Error).message).toContain(`queue "${q.name}" not idle within 200 ms`);
    expect((e as Error).message).toContain('0 pending, 1 delayed, 0 leased');
  });

  it('rejects with TIMEOUT while a job is leased', async () => {
    const q = queue();
    await q.add({});
    await q.lease({ count: 1, leaseMs: 60_000 });
    const e = await errorOf(whenIdle(q, { timeoutMs: 100 }));
    expect((e as WorkQueueError).code).toBe('TIMEOUT');
    expect((e as Error).message).toContain('0 pending, 0 delayed, 1 leased');
  });

  it('waits for a flow parent waiting for its children (work left, not idle)', async () => {
    // (It resolved at once: only pending, delayed and leased were looked at.)
    const q = queue();
    const flows = new FlowProducer(redis, { logger: false, prefix: q.options.prefix });
    await flows.add({ queue: q.name, data: 'p', children: [{ queue: `${q.name}-kids`, data: 1 }] });
    const e = await errorOf(whenIdle(q, { timeoutMs: 100 }));
    expect((e as WorkQueueError).code).toBe('TIMEOUT');
    expect((e as Error).message).toContain(
      '0 pending, 0 delayed, 0 leased, 1 waiting for children',
    );
  });

  it('refuses bad input with every problem listed, before reading anything', async () => {
    const q = queue();
    const cases: Array<[unknown, unknown, string[]]> = [
      [q, { timeoutMs: 0 }, ['timeoutMs must be a positive integer (ms), got 0']],
      [q, { timeoutMs: -5 }, ['timeoutMs must be a positive integer (ms), got -5']],
      [q, { timeoutMs: 1.5, intervalMs: 0 }, ['timeoutMs', 'intervalMs']],
      [q, {}, ['timeoutMs must be a positive integer (ms), got undefined']],
      [q, undefined, ['options must be an object']],
      [
        { name: 'x' },
        { timeoutMs: 10, wait: 1 },
        ['queue must be a WorkQueue', 'unknown option "wait"'],
      ],
      [null, { timeoutMs: 'soon' }, ['queue must be a WorkQueue', 'timeoutMs']],
      // (Longer than a timer waits: it gave up at once, with a TIMEOUT.)
      [q, { timeoutMs: 2 ** 31 }, ['timeoutMs must be at most 2147483647']],
      // (Named as given: JSON would say null.)
      [q, { timeoutMs: Infinity }, ['got Infinity']],
      [q, { timeoutMs: NaN }, ['got NaN']],
    ];
    for (const [queueArg, options, expected] of cases) {
      const call = whenIdle(queueArg as WorkQueue, options as { timeoutMs: number });
      const e = invalid(await errorOf(call));
      expect(e.code).toBe('INVALID_ARGUMENT');
      expect(e.problems).toHaveLength(expected.length);
      expected.forEach((text, i) => expect(e.problems[i]).toContain(text));
    }
  });
});

describe('removeKeys', () => {
  it('deletes every key of the prefix and only those, and says how many', async () => {
    const mine = uniquePrefix('rm');
    // Another prefix, and a longer one that starts with this one and a ':'.
    const other = uniquePrefix('rm');
    const longer = `${mine}:other`;
    prefixes.push(mine, other, longer);
    const a = new WorkQueue(redis, 'a', { prefix: mine, logger: false });
    const b = new WorkQueue(redis, 'b', { prefix: mine, logger: false });
    const kept = new WorkQueue(redis, 'a', { prefix: other, logger: false });
    const keptToo = new WorkQueue(redis, 'a', { prefix: longer, logger: false });
    await Promise.all([a.add({}), b.add({}, { delayMs: 60_000 }), kept.add({}), keptToo.add({})]);
    const before = await keysMatching(redis, `${mine}:{*`);
    expect(before.length).toBeGreaterThan(2);
    const keptBefore = [
      ...(await keysMatching(redis, `${other}:*`)),
      ...(await keysMatching(redis, `${longer}:*`)),
    ];

    expect(await removeKeys(redis, mine)).toBe(before.length);
    expect(await keysMatching(redis, `${mine}:{*`)).toEqual([]);
    expect([
      ...(await keysMatching(redis, `${other}:*`)),
      ...(await keysMatching(redis, `${longer}:*`)),
    ]).toEqual(keptBefore);
    expect(await keptToo.counts()).toMatchObject({ pending: 1 });
    expect(await removeKeys(redis, mine)).toBe(0);
  });

  it('a Redis that does not answer: REDIS_UNAVAILABLE within timeoutMs, not a hang', async () => {
    // A server that accepts connections and never replies.
    const silent = net.createServer((s) => s.resume()); // reads, never writes
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    const mute = new Redis({ host: '127.0.0.1', port, lazyConnect: true });
    mute.on('error', () => {});
    try {
      const t0 = Date.now();
      const e = await errorOf(removeKeys(mute, uniquePrefix('rm'), { timeoutMs: 300 }));
      expect((e as WorkQueueError).code).toBe('REDIS_UNAVAILABLE');
      expect((e as Error).message).toMatch(
        /^removeKeys: no reply from Redis to its connection handshake within 300 ms/,
      );
      expect(Date.now() - t0).toBeLessThan(2_000);
    } finally {
      mute.disconnect();
      silent.close();
    }
  });

  it('a client not connected yet with its offline queue off: connected first; a closed one: refused', async () => {
    const prefix = uniquePrefix('rm');
    prefixes.push(prefix);
    await new WorkQueue(redis, 'a', { prefix, logger: false }).add({});
    const before = (await keysMatching(redis, `${prefix}:{*`)).length;
    expect(before).toBeGreaterThan(0);
    // (Its commands would fail while it connects: "Stream isn't writeable…", untyped.)
    const lazy = new Redis(testRedisUrl(), { lazyConnect: true, enableOfflineQueue: false });
    const connecting = new Redis(testRedisUrl(), { enableOfflineQueue: false });
    try {
      expect(await removeKeys(connecting, uniquePrefix('rm'))).toBe(0);
      expect(await removeKeys(lazy, prefix)).toBe(before);
      expect(await keysMatching(redis, `${prefix}:{*`)).toEqual([]);
    } finally {
      lazy.disconnect();
      connecting.disconnect();
    }
    await waitFor(() => lazy.status === 'end', { what: 'the client closed' });
    const closed = invalid(await errorOf(removeKeys(lazy, prefix)));
    expect(closed.code).toBe('INVALID_ARGUMENT');
    expect(closed.problems).toEqual([
      'client is closed (quit() or disconnect() was called): pass an open one',
    ]);
    // Right after quit() (or disconnect()), before the client's status says 'end'.
    for (const close of ['quit', 'disconnect'] as const) {
      const c = new Redis(testRedisUrl());
      await c.ping();
      if (close === 'quit') await c.quit();
      else c.disconnect();
      const e = invalid(await errorOf(removeKeys(c, prefix)));
      expect(e.code).toBe('INVALID_ARGUMENT');
      expect(e.problems).toEqual([
        'client is closed (quit() or disconnect() was called): pass an open one',
      ]);
    }
  });

  it('refuses a prefix that could match other keys, and a non-client', async () => {
    const e = invalid(await errorOf(removeKeys(redis, 'wq*')));
    expect(e.code).toBe('INVALID_ARGUMENT');
    const both = invalid(await errorOf(removeKeys({} as Redis, '')));
    expect(both.problems).toHaveLength(2);
    expect(both.problems[0]).toContain('client must be an ioredis Redis or Cluster');
    const bad = invalid(await errorOf(removeKeys(redis, 'p', { timeoutMs: 0, x: 1 } as never)));
    expect(bad.problems).toEqual([
      'unknown option "x" (known: timeoutMs)',
      'timeoutMs must be a positive integer (ms), got 0',
    ]);
  });
});
