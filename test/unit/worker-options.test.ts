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
