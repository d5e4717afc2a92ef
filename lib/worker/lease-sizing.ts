// How much the lease loop asks for: 'auto' prefetch, and each lease call's share of the room
// (concurrency + prefetch) while the queue has a backlog.

/**
 * Lease calls that share the worker's room: each asks for at most its share, so while the
 * worker runs one reply's jobs, Redis answers the next call.
 */
export const LEASE_SHARES = 2;
/** Most jobs one lease call may ask for (`lease({ count })`'s maximum). */
export const MAX_LEASE_COUNT = 10_000;
/** A parked worker counts as parked this much longer than its longest idle wait. */
export const PARK_MARGIN_MS = 1_000;
/**
 * 'auto' prefetch for jobs far shorter than a round trip: each lease call may bring as many jobs
 * as fill every slot plus this many (so the room is LEASE_SHARES × (concurrency + this)).
 */
const AUTO_AHEAD_PER_CALL = 64;
/** Weight of the newest sample in the running averages of 'auto' prefetch and payload size. */
const AVERAGE_WEIGHT = 0.1;

const average = (avg: number, sample: number) =>
  Number.isFinite(avg) ? avg + (sample - avg) * AVERAGE_WEIGHT : sample;

/**
 * Leases go by reference (the payloads read with HMGET behind the call, not copied through the
 * script) while the jobs' payloads average at least this many bytes.
 */
const BY_REF_BYTES = 2_048;

/**
 * 'auto' prefetch: what `concurrency` slots finish while the calls in flight before a job asked
 * for now answer (average call `callMs`, handler `jobMs`), at least 1.
 */
function autoPrefetch(concurrency: number, callMs: number, jobMs: number): number {
  const ahead = Math.ceil((LEASE_SHARES * concurrency * callMs) / jobMs);
  const max = LEASE_SHARES * AUTO_AHEAD_PER_CALL + (LEASE_SHARES - 1) * concurrency;
  return Math.min(max, Math.max(1, Number.isFinite(ahead) ? ahead : 1));
}

/** Most jobs one lease call asks for while the queue has a backlog. */
export function leaseShare(concurrency: number, prefetch: number): number {
  return Math.ceil((concurrency + prefetch) / LEASE_SHARES);
}

/** The lease loop's running averages: handler run and lease call (ms), payload bytes. */
export class LeaseSizing {
  private jobMs = Number.POSITIVE_INFINITY;
  private callMs = 0;
  /** NaN: no job leased yet. */
  private payloadAvg = Number.NaN;

  /** Jobs held leased ahead of free slots (the `prefetch` option, or 'auto' from the averages). */
  prefetch(option: number | 'auto', concurrency: number): number {
    return option === 'auto' ? autoPrefetch(concurrency, this.callMs, this.jobMs) : option;
  }

  /** A handler ran `ms`. */
  sampleJob(ms: number): void {
    this.jobMs = average(this.jobMs, ms);
  }

  /** A lease call took `ms`. */
  sampleCall(ms: number): void {
    this.callMs = average(this.callMs, ms);
  }

  /** A lease call brought `jobs` jobs of `bytes` payload bytes in all. */
  samplePayloads(jobs: number, bytes: number): void {
    if (jobs > 0) this.payloadAvg = average(this.payloadAvg, bytes / jobs);
  }

  /** Whether leases go by reference (large payloads). */
  get byRef(): boolean {
    return this.payloadAvg >= BY_REF_BYTES;
  }
}
