// How much the lease loop asks for: 'auto' prefetch, and each lease call's share of the room
// (concurrency + prefetch) while the queue has a backlog.

/**
 * Lease calls that share the worker's room: each asks for at most its share, so while the
 * worker runs one reply's jobs, Redis answers the next call.
 */
export const LEASE_SHARES = 2;
/**
 * 'auto' prefetch for jobs far shorter than a round trip: each lease call may bring as many jobs
 * as fill every slot plus this many (so the room is LEASE_SHARES × (concurrency + this)).
 */
const AUTO_AHEAD_PER_CALL = 64;
/** Weight of the newest sample in the running averages of 'auto' prefetch and payload size. */
const AVERAGE_WEIGHT = 0.1;

export const average = (avg: number, sample: number) =>
  Number.isFinite(avg) ? avg + (sample - avg) * AVERAGE_WEIGHT : sample;

/**
 * 'auto' prefetch: what `concurrency` slots finish while the calls in flight before a job asked
 * for now answer (average call `callMs`, handler `jobMs`), at least 1.
 */
export function autoPrefetch(concurrency: number, callMs: number, jobMs: number): number {
  const ahead = Math.ceil((LEASE_SHARES * concurrency * callMs) / jobMs);
  const max = LEASE_SHARES * AUTO_AHEAD_PER_CALL + (LEASE_SHARES - 1) * concurrency;
  return Math.min(max, Math.max(1, Number.isFinite(ahead) ? ahead : 1));
}

/** Most jobs one lease call asks for while the queue has a backlog. */
export function leaseShare(concurrency: number, prefetch: number): number {
  return Math.ceil((concurrency + prefetch) / LEASE_SHARES);
}
