/** Small argument checks shared by every layer. */

/**
 * A value as a problem shows it ("got …"): JSON, but numbers as JavaScript writes them (NaN and
 * Infinity, which JSON writes as null), a function as 'a function'.
 */
export function shown(v: unknown): string {
  if (typeof v === 'number') return String(v);
  if (typeof v === 'function') return 'a function';
  return printable(v);
}

/**
 * `v` as text for a message: its JSON, else `String(v)`, else its tag (`[object Object]`: a
 * cycle in an object without a prototype, a `toString` or `toJSON` that throws). Never throws.
 */
export function printable(v: unknown): string {
  try {
    const json = JSON.stringify(v);
    if (json !== undefined) return json;
  } catch {
    // not JSON: a cycle, a BigInt, a toJSON that throws
  }
  try {
    return String(v);
  } catch {
    // no string form either
  }
  return tagOf(v);
}

/** `v`'s tag (`[object Error]`), for a value none of whose fields can be read. Never throws. */
export function tagOf(v: unknown): string {
  try {
    return Object.prototype.toString.call(v);
  } catch {
    return '(a value that cannot be shown)';
  }
}

/** A positive integer (a count, a duration in ms), exact as a JavaScript number. */
export function isPosInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0;
}

/**
 * The latest time (ms since the epoch, year 5138) a job may be due at: below it a time stays
 * exact wherever the scripts write it (Lua's cjson keeps 14 significant digits).
 */
export const MAX_TIME_MS = 1e14;
/** The longest delay (ms, ~2 850 years): now + a delay stays below MAX_TIME_MS. */
export const MAX_DELAY_MS = 9e13;

/** The problem of a delay `v` (ms from now: an integer 0..MAX_DELAY_MS), if any. */
export function delayMsProblem(what: string, v: unknown): string | undefined {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= MAX_DELAY_MS
    ? undefined
    : `${what} must be an integer 0..${MAX_DELAY_MS} (ms), got ${shown(v)}`;
}

/**
 * The problem of a time `v` (a Date, or ms since the epoch) a job is to run at, if any: a valid
 * Date before MAX_TIME_MS (one in the past means now).
 */
export function runAtProblem(what: string, v: unknown): string | undefined {
  const t = v instanceof Date ? v.getTime() : v;
  if (v instanceof Date && !Number.isFinite(t)) return `${what} is an invalid Date`;
  return typeof t === 'number' && Number.isFinite(new Date(t).getTime()) && t < MAX_TIME_MS
    ? undefined
    : `${what} must be a valid Date or ms timestamp before ${MAX_TIME_MS} (year 5138), got ${v instanceof Date ? v.toISOString() : shown(v)}`;
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
 * A method's options argument (`what`, for its problems): undefined or null is none; anything
 * but a plain object — BullMQ's positional arguments such as `getJobs(types, start, end)` — is a
 * problem, as is each key other than `known` (a mistyped key would otherwise be ignored).
 */
export function optionsObject(
  what: string,
  opts: unknown,
  known: readonly string[],
  problems: string[],
): Record<string, unknown> {
  if (opts === undefined || opts === null) return {};
  if (typeof opts !== 'object' || Array.isArray(opts)) {
    problems.push(`${what} must be an object { ${known.join(', ')} }, got ${shown(opts)}`);
    return {};
  }
  const o = opts as Record<string, unknown>;
  for (const k of Object.keys(o))
    if (!known.includes(k) && o[k] !== undefined)
      problems.push(`unknown option ${JSON.stringify(k)}; known: ${known.join(', ')}`);
  return o;
}

/**
 * The page a listing call asks for (`offset` an integer >= 0, default 0; `limit` 1..`max`,
 * default 100), its problems added to `problems`: options that are not an object (BullMQ's
 * positional `start, end`) and keys other than `known` are problems too.
 */
export function pageOf(
  opts: unknown,
  max: number,
  problems: string[],
  known: readonly string[] = ['offset', 'limit'],
): { offset: number; limit: number } {
  const o = optionsObject('options', opts, known, problems);
  const offset = o.offset ?? 0;
  const limit = o.limit ?? 100;
  if (!Number.isSafeInteger(offset) || (offset as number) < 0)
    problems.push(`offset must be an integer >= 0, got ${shown(offset)}`);
  if (!isPosInt(limit) || limit > max)
    problems.push(`limit must be an integer 1..${max}, got ${shown(limit)}`);
  return { offset: offset as number, limit: limit as number };
}

/** A lone UTF-16 surrogate: no UTF-8 for it (Redis would store U+FFFD in its place). */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether `v` has a lone UTF-16 surrogate. */
export function hasLoneSurrogate(v: string): boolean {
  return LONE_SURROGATE.test(v);
}

/**
 * Why string `v` (an id, a group) cannot be stored as itself: a lone surrogate would come back as
 * U+FFFD — another id, or two ids as one. Undefined when it can.
 */
export function malformedProblem(what: string, v: string): string | undefined {
  return hasLoneSurrogate(v)
    ? `${what} ${shown(v)} has a lone UTF-16 surrogate: it cannot be stored as UTF-8`
    : undefined;
}
