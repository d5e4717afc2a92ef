/**
 * Shared by the schedule tests on the core queue (queue-storing, queue-ticks): a snapshot of a
 * queue's Redis state, the tick a tick job's id names, and leasing the ticks as they come.
 */
import type { Redis } from 'ioredis';
import type { LeasedJob, LeaseOptions, WorkQueue } from '../../../lib/index.js';
import { keysMatching } from '../../support/keys.js';
import { waitFor } from '../../support/wait.js';

/** Every key of the queue with its DUMP and TTL: equal snapshots, equal Redis state. */
export async function snapshot(c: Redis, q: WorkQueue<unknown>): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const k of await keysMatching(c, `${q.keys.base}*`)) {
    out[k] = [(await c.dumpBuffer(k))?.toString('hex'), await c.pttl(k)];
  }
  return out;
}

/** The time (ms) of the tick whose job has id `id` (`<schedule id>:<tick>`). */
export const tickOf = (id: string) => Number(id.slice(id.lastIndexOf(':') + 1));

/** The jobs of the first lease() with `options` that gets any, polled for (`wait`: waitFor's). */
export function leasedSoon<T>(
  q: WorkQueue<T>,
  options: LeaseOptions,
  wait: { what: string; timeoutMs?: number },
): Promise<LeasedJob<T>[]> {
  return waitFor(async () => {
    const got = await q.lease(options);
    return got.length > 0 ? got : null;
  }, wait);
}
