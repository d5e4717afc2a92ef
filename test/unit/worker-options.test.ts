// The Worker's defaults that follow its queue — and its own options where they differ.
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { WorkQueue } from '../../lib/index.js';
import { resolveWorkerOptions } from '../../lib/worker/options.js';
import { offlineClient } from '../support/core.js';

let offline: Redis;
beforeAll(async () => {
  offline = await offlineClient();
});
afterAll(() => offline.disconnect());

it.each([
  // [queue leaseMs, worker leaseMs, the worker's cleanIntervalMs]
  [30_000, undefined, 500], // a quarter of the heartbeat timeout (2 000 by default)
  [30_000, 400, 100], // the worker's own short lease: its leases lapse that fast
  [1_000, undefined, 250],
  [1_000, 60_000, 500],
] as const)(
  'queue leaseMs %s, worker leaseMs %s: cleanIntervalMs %s (a quarter of the smaller of heartbeatTimeoutMs and leaseMs, 100 … 5 000)',
  (queueLease, workerLease, interval) => {
    const q = new WorkQueue(offline, 'q', { leaseMs: queueLease, logger: false });
    const s = resolveWorkerOptions(q, { leaseMs: workerLease }, () => undefined);
    expect(s.leaseMs).toBe(workerLease ?? queueLease);
    expect(s.cleanIntervalMs).toBe(interval);
  },
);

it("refuses a heartbeatIntervalMs over half the queue's heartbeatTimeoutMs (the worker would be taken for dead after one late beat, or between beats), listed with the rest", () => {
  const q = new WorkQueue(offline, 'q', { heartbeatTimeoutMs: 2_000, logger: false });
  expect(resolveWorkerOptions(q, { heartbeatIntervalMs: 1_000 }, () => undefined)).toMatchObject({
    heartbeatIntervalMs: 1_000,
  });
  // The default: a quarter, at least 100 ms, at most half the timeout (a 150 ms timeout: 75).
  for (const [timeout, beat] of [
    [2_000, 500],
    [300, 100],
    [150, 75],
    [1, 1],
  ]) {
    const short = new WorkQueue(offline, 'q', { heartbeatTimeoutMs: timeout, logger: false });
    expect(resolveWorkerOptions(short, {}, () => undefined).heartbeatIntervalMs).toBe(beat);
  }
  for (const ms of [1_001, 2_000, 5_000]) {
    expect(() =>
      resolveWorkerOptions(q, { heartbeatIntervalMs: ms, concurrency: 0 }, () => undefined),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        problems: [
          'concurrency must be a positive integer, got 0',
          expect.stringMatching(
            new RegExp(
              `^heartbeatIntervalMs must be at most half the queue's heartbeatTimeoutMs \\(2000.*got ${ms}$`,
            ),
          ),
        ],
      }) as unknown as Error,
    );
  }
});

it('a value without a string form, or of the wrong type, is one problem each, listed: never a TypeError', () => {
  const q = new WorkQueue(offline, 'q', { logger: false });
  // A cycle in an object without a prototype: neither JSON nor String() can show it.
  const cyclic = Object.create(null) as Record<string, unknown>;
  cyclic.self = cyclic;
  const opts = { concurrency: Symbol('c'), leaseMs: cyclic, jobTimeoutMs: '20000' };
  expect(() => resolveWorkerOptions(q, opts as never, () => undefined)).toThrow(
    expect.objectContaining({
      code: 'INVALID_OPTIONS',
      problems: [
        'concurrency must be a positive integer, got Symbol(c)',
        'leaseMs must be a positive integer, got [object Object]',
        'jobTimeoutMs must be a positive integer, got "20000"',
      ],
    }) as unknown as Error,
  );
  // A numeric string over the bound: one problem (its type), not a second for the bound.
  expect(() => resolveWorkerOptions(q, { concurrency: '20000' } as never, () => undefined)).toThrow(
    expect.objectContaining({
      problems: ['concurrency must be a positive integer, got "20000"'],
    }) as unknown as Error,
  );
  expect(() => new WorkQueue(offline, 'q', { leaseMs: cyclic } as never)).toThrow(
    expect.objectContaining({ code: 'INVALID_OPTIONS' }) as unknown as Error,
  );
});
