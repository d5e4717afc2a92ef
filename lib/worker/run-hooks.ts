// Runs a worker's run hooks (types/hooks.ts) around each handler call.
import type { RunHook } from '../types/hooks.js';
import type { Job } from '../types/job.js';

/** `run` inside every hook (the first installed innermost). */
export function runRunHooks<X>(
  hooks: readonly RunHook[],
  job: Job<unknown>,
  run: () => Promise<X>,
): Promise<X> {
  let next = run;
  for (const hook of hooks) {
    const inner = next;
    next = () => hook.aroundRun(job, inner);
  }
  return next();
}
