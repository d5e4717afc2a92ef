// How often a Worker renews its leases: every third of leaseMs, however short the lease (a
// 50 ms floor once let leases under ~50 ms lapse between renewals: the worker's own clean()
// took back running jobs, which ran again and were dead-lettered for lease expiries).
import { afterEach, describe, expect, it, jest } from '@jest/globals';
import type { WorkerContext } from '../../lib/worker/context.js';
import { LeaseRenewer } from '../../lib/worker/lease-renewer.js';

afterEach(() => {
  jest.restoreAllMocks();
});

/** The renewal period of a renewer for leases of `leaseMs` (its first interval timer's). */
function renewalEvery(leaseMs: number): number {
  const periods: number[] = [];
  // (Timers noted, not armed: a handle stop() clears.)
  jest.spyOn(globalThis, 'setInterval').mockImplementation(((_fn: () => void, ms?: number) => {
    periods.push(ms ?? 0);
    return { unref: () => undefined };
  }) as unknown as typeof setInterval);
  const ctx = {
    settings: { leaseMs, heartbeatIntervalMs: 1_000 },
    queue: { options: { heartbeatTimeoutMs: 30_000 } },
  } as unknown as WorkerContext<unknown, unknown>;
  const renewer = new LeaseRenewer(ctx);
  renewer.start();
  renewer.stop();
  return periods[0]!;
}

describe('lease renewal period', () => {
  it('is a third of leaseMs, for short leases too', () => {
    expect(renewalEvery(30_000)).toBe(10_000);
    expect(renewalEvery(300)).toBe(100);
    expect(renewalEvery(60)).toBe(20);
    expect(renewalEvery(20)).toBe(6);
    expect(renewalEvery(2)).toBe(1);
  });
});
