/** Small argument checks shared by every layer. */

/** A positive integer (a count, a duration in ms). */
export function isPosInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0;
}

/** The longest a Node timer waits (ms): a longer setTimeout fires after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/** The problem of option `name` (ms) that a timer waits for, if it is over MAX_TIMER_MS. */
export function timerProblem(name: string, v: unknown): string | undefined {
  return typeof v === 'number' && v > MAX_TIMER_MS
    ? `${name} must be at most ${MAX_TIMER_MS} (ms: the longest a timer waits), got ${v}`
    : undefined;
}
