// The argument checks of the testing kit: every problem found, one string each, thrown as one
// INVALID_ARGUMENT error.
import { checkName, MAX_TIMER_MS, WorkQueueError } from '../../lib/internal.js';

/** The INVALID_ARGUMENT error of a kit function: every problem, one per entry. */
export function invalidArgument(what: string, problems: string[]): WorkQueueError {
  return new WorkQueueError('INVALID_ARGUMENT', `${what}: ${problems.join('; ')}`, problems);
}

/** Problems of an options object: not an object, a key not in `known`. */
export function optionsProblems(options: unknown, known: readonly string[]): string[] {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    return [`options must be an object { ${known.join(', ')} }, got ${describe(options)}`];
  }
  return Object.entries(options)
    .filter(([key, value]) => !known.includes(key) && value !== undefined)
    .map(([key]) => `unknown option "${key}" (known: ${known.join(', ')})`);
}

/** A positive integer (ms), or undefined when optional. */
export function checkPositiveMs(what: string, v: unknown, problems: string[], optional = false) {
  if (optional && v === undefined) return;
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    problems.push(`${what} must be a positive integer (ms), got ${describe(v)}`);
  } else if (v > MAX_TIMER_MS) {
    // (A longer timer fires at once: a wait that longer would give up at once.)
    problems.push(
      `${what} must be at most ${MAX_TIMER_MS} (ms: the longest a timer waits), got ${v}`,
    );
  }
}

/** A key prefix (or label): 1-`max` characters of letters, digits, '.', '_', '-' or ':'. */
export function checkPrefix(what: string, v: unknown, problems: string[], max = 100): void {
  const found: string[] = [];
  checkName(what, v, found);
  // (A name's own limit is 100: a shorter one says its own.)
  if (max !== 100) found.forEach((p, i) => (found[i] = p.replace('1-100 ', `1-${max} `)));
  if (found.length === 0 && (v as string).length > max) {
    found.push(`${what} must be at most ${max} characters, got ${(v as string).length}`);
  }
  problems.push(...found);
}

export function describe(v: unknown): string {
  if (typeof v === 'function') return 'a function';
  if (v === undefined) return 'undefined';
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v); // (JSON: null)
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
