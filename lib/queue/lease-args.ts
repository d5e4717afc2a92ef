// What every lease holder's call checks first: lease()'s and fail()'s options, and which worker
// holds which of the leases given.
import { invalid } from '../errors.js';
import { backoffDelay } from '../options.js';
import type { FailOptions, Lease, LeasedJob, LeaseOptions } from '../types/index.js';
import { delayMsProblem, isPosInt, MAX_DELAY_MS, shown } from '../util/checks.js';
import { nestedUnknown } from '../util/unknown-options.js';
import type { QueueContext } from './context.js';

/** lease()'s options. */
const LEASE_KEYS = ['count', 'leaseMs', 'workerId'];

/** `strict`: a key that is none of lease()'s options is a problem too (lease() by hand). */
export function leaseArgs(
  ctx: QueueContext,
  opts: LeaseOptions,
  strict = false,
): { count: number; leaseMs: number; workerId: string } {
  const o: LeaseOptions = opts ?? {};
  const count = o.count ?? 1;
  const leaseMs = o.leaseMs ?? ctx.options.leaseMs;
  const workerId = o.workerId ?? '0';
  const problems: string[] = [];
  if (strict && typeof o === 'object') nestedUnknown('lease', o, LEASE_KEYS, problems);
  if (!isPosInt(count) || count > 10_000)
    problems.push(`count must be an integer 1..10000, got ${shown(count)}`);
  if (!isPosInt(leaseMs) || leaseMs > MAX_DELAY_MS)
    problems.push(`leaseMs must be an integer 1..${MAX_DELAY_MS}, got ${shown(leaseMs)}`);
  if (!/^\d+$/.test(workerId))
    problems.push(`workerId must come from registerWorker(), got ${shown(workerId)}`);
  if (problems.length) throw invalid(problems, `${ctx.name}: lease refused`);
  return { count, leaseMs, workerId };
}

/** Run `fn` once per worker holding some of `leases`; the answers in the order given. */
export async function perWorker<V = boolean>(
  ctx: QueueContext,
  leases: Lease | readonly Lease[],
  fn: (workerId: string, group: Lease[]) => Promise<V[]>,
): Promise<V[]> {
  const list = Array.isArray(leases) ? (leases as readonly Lease[]) : [leases as Lease];
  const groups = new Map<string, Lease[]>();
  for (const l of list) {
    ctx.checkLease(l);
    const g = groups.get(l.workerId) ?? [];
    g.push(l);
    groups.set(l.workerId, g);
  }
  const result = new Map<Lease, V>();
  for (const [w, g] of groups) {
    const r = await fn(w, g);
    g.forEach((l, i) => result.set(l, r[i]!));
  }
  return list.map((l) => result.get(l)!);
}

/** fail()'s options checked (every problem at once): retry or dead-letter, after `delay` ms. */
export function failArgs(
  ctx: QueueContext,
  lease: Lease,
  error: unknown,
  opts: FailOptions,
): { mode: 'retry' | 'dead'; delay: number } {
  const o: FailOptions = typeof opts === 'object' && opts !== null ? opts : {};
  const problems: string[] = [];
  if (opts !== undefined && o !== opts) problems.push('fail options must be an object');
  nestedUnknown('fail options', o, ['delayMs', 'retryable'], problems);
  const delayWrong =
    o.delayMs === undefined ? undefined : delayMsProblem('fail delayMs', o.delayMs);
  if (delayWrong) problems.push(delayWrong);
  if (o.retryable !== undefined && typeof o.retryable !== 'boolean')
    problems.push(`fail retryable must be a boolean, got ${shown(o.retryable)}`);
  if (problems.length > 0) throw invalid(problems);
  const retryable =
    o.retryable ??
    !(
      typeof error === 'object' &&
      error !== null &&
      (error as { retryable?: unknown }).retryable === false
    );
  const job = lease as Partial<LeasedJob>;
  const delay = o.delayMs ?? backoffDelay(job.backoff ?? ctx.options.backoff, job.attempt ?? 1);
  const mode = retryable ? 'retry' : 'dead';
  return { mode, delay };
}
