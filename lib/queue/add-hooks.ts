// Runs a queue's add hooks (types/hooks.ts) around the call that writes its jobs.
import type { AddHook } from '../types/hooks.js';
import type { AddResult } from '../types/job.js';

/** `send` inside every hook (the first installed innermost); an inner hook's context wins. */
export function runAddHooks(
  hooks: readonly AddHook[],
  queueName: string,
  jobs: number,
  send: (traceContext: string | undefined) => Promise<AddResult[]>,
): Promise<AddResult[]> {
  let next = send;
  for (const hook of hooks) {
    const inner = next;
    next = (outer) => hook.aroundAdd(queueName, jobs, (own) => inner(own ?? outer));
  }
  return next(undefined);
}
