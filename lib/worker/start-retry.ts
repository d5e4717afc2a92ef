// A worker started at construction (autostart) that meets Redis unreachable, or refusing writes
// for a state that passes (out of memory under noeviction, a replica, still loading…), keeps
// trying: a worker made during an outage starts once Redis is back. (An explicit start()
// rejects instead, bounded: its caller decides.)
import { WorkQueueError } from '../errors.js';

/** Back-off between attempts: from 250 ms, doubling, up to 5 s. */
const FIRST_WAIT_MS = 250;
const MAX_WAIT_MS = 5_000;

/**
 * `step()`, and while it fails with REDIS_UNAVAILABLE, again — for an autostart (`keep`: its
 * worker; undefined: once) until its worker closes; each failure is reported. Any other failure
 * (refused options, an old Redis, an ACL refusal) rejects at once, as does the last once closed.
 */
export async function untilAnswered<X>(
  step: () => Promise<X>,
  keep: { readonly closing: boolean; report(e: unknown): void } | undefined,
): Promise<X> {
  if (!keep) return step();
  for (let wait = FIRST_WAIT_MS; ; wait = Math.min(wait * 2, MAX_WAIT_MS)) {
    try {
      return await step();
    } catch (e) {
      if (!(e instanceof WorkQueueError) || e.code !== 'REDIS_UNAVAILABLE' || keep.closing) throw e;
      keep.report(e);
      // (Unref'd: the connection keeps the process up meanwhile, and a close() is not held.)
      await new Promise((r) => setTimeout(r, wait).unref());
      if (keep.closing) throw e;
    }
  }
}
