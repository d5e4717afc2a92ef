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

/**
 * The page a listing call asks for (`offset` an integer >= 0, default 0; `limit` 1..`max`,
 * default 100; options that are not an object are none), its problems added to `problems`.
 */
export function pageOf(
  opts: unknown,
  max: number,
  problems: string[],
): { offset: number; limit: number } {
  const o = (typeof opts === 'object' && opts !== null ? opts : {}) as {
    offset?: unknown;
    limit?: unknown;
  };
  const offset = o.offset ?? 0;
  const limit = o.limit ?? 100;
  if (!Number.isSafeInteger(offset) || (offset as number) < 0)
    problems.push(`offset must be an integer >= 0, got ${JSON.stringify(offset)}`);
  if (!isPosInt(limit) || limit > max)
    problems.push(`limit must be an integer 1..${max}, got ${JSON.stringify(limit)}`);
  return { offset: offset as number, limit: limit as number };
}
