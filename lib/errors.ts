import { delayMsProblem, printable, runAtProblem, tagOf } from './util/checks.js';

/** Every error this package throws on purpose carries one of these codes. */
export type WorkQueueErrorCode =
  | 'INVALID_ARGUMENT'
  | 'INVALID_OPTIONS'
  | 'ENCODE_FAILED'
  | 'PAYLOAD_TOO_LARGE'
  | 'LEASE_LOST'
  | 'FOREIGN_LEASE'
  | 'NOT_FOUND'
  | 'BAD_STATE'
  | 'REDIS_VERSION'
  | 'REDIS_UNAVAILABLE'
  /**
   * An add (a job, a flow, a schedule) was stored on the master but fewer replicas than
   * `replicaAcks` confirmed it.
   */
  | 'NOT_REPLICATED'
  | 'SCRIPT_ERROR'
  | 'CLOSED'
  /** waitForResult: the job was dead-lettered (JobOutcomeError: its reason). */
  | 'JOB_DEAD'
  /** waitForResult: the job was cancelled. */
  | 'JOB_CANCELLED'
  /** A wait the caller bounded (e.g. waitForResult's timeoutMs) ran out. */
  | 'TIMEOUT'
  /** The caller's AbortSignal fired (the signal's reason is the cause). */
  | 'ABORTED'
  /** A sandboxed handler's thread or process died (exit, crash, out of memory) running the job. */
  | 'SANDBOX_DIED';

/** Codes of refused input: their `problems` list what was wrong (at least the message). */
const LISTED: ReadonlySet<string> = new Set([
  'INVALID_ARGUMENT',
  'INVALID_OPTIONS',
  'ENCODE_FAILED',
  'PAYLOAD_TOO_LARGE',
]);

export class WorkQueueError extends Error {
  override readonly name = 'WorkQueueError';
  /**
   * For refused input (INVALID_OPTIONS, INVALID_ARGUMENT, ENCODE_FAILED, PAYLOAD_TOO_LARGE): every
   * problem found, one per entry (never empty: a refusal made of its message alone has that
   * message as its one problem).
   */
  readonly problems: readonly string[];
  constructor(
    readonly code: WorkQueueErrorCode,
    message: string,
    problems: readonly string[] = [],
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.problems = problems.length === 0 && LISTED.has(code) ? [message] : problems;
  }
}

/** How a job ended when it did not complete: waitForResult rejects with it. */
export class JobOutcomeError extends WorkQueueError {
  constructor(
    code: 'JOB_DEAD' | 'JOB_CANCELLED',
    /** The job's public id. */
    readonly jobId: string,
    /** Why it was dead-lettered (its last error, or e.g. 'lease expired 3 times'); '' if cancelled. */
    readonly reason: string,
  ) {
    super(
      code,
      code === 'JOB_DEAD' ? `job ${jobId} is dead: ${reason}` : `job ${jobId} was cancelled`,
    );
  }
}

/**
 * Throw this (or an error whose `retryable` property is `false`) from a handler to
 * dead-letter the job at once instead of retrying it.
 */
export class NonRetryableError extends Error {
  override readonly name: string = 'NonRetryableError';
  readonly retryable = false;
}

/**
 * Throw this from a handler when the remote side says "wait" (e.g. HTTP 429): the job goes back
 * to the front of its priority without counting an attempt, and the whole queue (every worker,
 * every process) leases nothing for `delayMs` (Redis time).
 */
export class RateLimitError extends Error {
  override readonly name: string = 'RateLimitError';
  /**
   * How long the queue leases nothing, ms: the `ms` given, rounded up, 1 ms to one day
   * (`Infinity`: one day; not a number at all, e.g. a missing Retry-After's NaN: 1 s).
   */
  readonly delayMs: number;
  constructor(ms: number, message?: string) {
    const delayMs = rateLimitMs(ms);
    super(message ?? `rate limited for ${delayMs} ms`);
    this.delayMs = delayMs;
  }
}

/** A RateLimitError's `ms` as the queue holds it (see there). */
export function rateLimitMs(ms: unknown): number {
  return typeof ms === 'number' && !Number.isNaN(ms)
    ? Math.min(86_400_000, Math.max(1, Math.ceil(ms)))
    : 1_000;
}

/**
 * `job.rateLimited(ms)`: throws the RateLimitError that holds the queue (or the job's group) for
 * `ms`, taken as `throw new RateLimitError(ms)` takes it (a missing Retry-After's 0 or NaN holds
 * 1 ms or 1 s: docs/flow-control.md). The worker's job and a sandbox's job share it.
 */
export function rateLimited(ms: number): never {
  throw new RateLimitError(ms);
}

/**
 * Throw this from a handler to put its job back to sleep without counting an attempt (BullMQ's
 * step-job pattern: `job.updateData(next)` then `throw new DelayedError(ms)`): the job waits in
 * the delayed set until `delay` (ms from now, Redis time) or the `Date` given (compared with Redis
 * time; one not in the future runs again at once), its data as last updated. A delay that is not
 * an integer 0..MAX_DELAY_MS (9e13 ms), or a Date that is invalid or past year 5138, throws
 * INVALID_ARGUMENT here (which fails the attempt).
 */
export class DelayedError extends Error {
  override readonly name: string = 'DelayedError';
  /** ms from now, or a time (ms since the epoch) when `delay` was a Date. */
  readonly delayMs: number | undefined;
  readonly runAt: number | undefined;
  constructor(delay: number | Date, message?: string) {
    const at = delay instanceof Date ? delay.getTime() : undefined;
    const problem =
      delay instanceof Date ? runAtProblem('delay', delay) : delayMsProblem('delay', delay);
    if (problem)
      throw new WorkQueueError('INVALID_ARGUMENT', `DelayedError: ${problem}`, [problem]);
    super(
      message ??
        (at === undefined
          ? `delayed for ${String(delay)} ms`
          : `delayed until ${new Date(at).toISOString()}`),
    );
    this.delayMs = at === undefined ? (delay as number) : undefined;
    this.runAt = at;
  }
}

/**
 * The failure codes scripts return, the one table of them: a script names one as `E_<code>`
 * (e.g. `return E_LEASE_LOST`) and the assembler binds the ones it uses to their `reply`
 * (lib/scripts/assemble.ts); scriptError turns such a reply into a typed error.
 */
export const SCRIPT_CODES = {
  LEASE_LOST: {
    reply: -1,
    message: 'the lease was lost (expired and reclaimed, or the job was cancelled or completed)',
  },
  NOT_FOUND: { reply: -2, message: 'no such job' },
  BAD_STATE: { reply: -3, message: 'the job is not in a state that allows this' },
} as const satisfies Partial<Record<WorkQueueErrorCode, { reply: number; message: string }>>;

/** The one place where a script's failure code becomes a typed error. */
export function scriptError(reply: number, context: string): WorkQueueError {
  for (const [code, known] of Object.entries(SCRIPT_CODES)) {
    if (known.reply === reply) {
      return new WorkQueueError(code as WorkQueueErrorCode, `${context}: ${known.message}`);
    }
  }
  return new WorkQueueError('SCRIPT_ERROR', `${context}: unexpected script code ${reply}`);
}

/** Wrap a Redis/connection error in a typed error, keeping the cause. */
export function redisError(context: string, cause: unknown): WorkQueueError {
  if (cause instanceof WorkQueueError) return cause;
  const msg = cause instanceof Error ? cause.message : String(cause);
  // A reply error means Redis answered (a script or command failed), not that it is down —
  // unless it refused the credentials, or refuses writes for a state that passes (a master
  // without enough replicas under min-replicas-to-write, a replica, still loading, a master down,
  // busy with a script, a Cluster failing over): Redis is as good as unreachable, call again.
  const unavailable =
    /^(WRONGPASS|NOAUTH|NOREPLICAS|READONLY|LOADING|MASTERDOWN|BUSY|TRYAGAIN|CLUSTERDOWN|OOM)\b/.test(
      msg,
    );
  const code =
    cause instanceof Error && cause.name === 'ReplyError' && !unavailable
      ? 'SCRIPT_ERROR'
      : 'REDIS_UNAVAILABLE';
  // (Redis names the script's line, not the command an ACL user lacks: say where they are listed.)
  const hint = /can't run this command/.test(msg)
    ? ' (the ACL user lacks a command of this script: docs/reliability-and-security.md#security lists what each feature needs)'
    : '';
  return new WorkQueueError(code, `${context}: ${msg}${hint}`, [], { cause });
}

/** The one INVALID_OPTIONS error: a title, then every problem found, one per line. */
export function invalidOptions(title: string, problems: readonly string[]): WorkQueueError {
  return new WorkQueueError('INVALID_OPTIONS', `${title}:\n  - ${problems.join('\n  - ')}`, [
    ...problems,
  ]);
}

export function invalid(problems: string[], what = 'invalid argument'): WorkQueueError {
  return new WorkQueueError('INVALID_ARGUMENT', `${what}: ${problems.join('; ')}`, problems);
}

/** Longest error message kept (stored with a failed job, logged, shown in health details). */
export const MAX_ERROR_CHARS = 2000;

/**
 * A short, printable message for anything thrown (at most MAX_ERROR_CHARS, its end cut to `…`).
 * Never throws: a value without a string form (a cycle in an object without a prototype, a
 * `toString` that throws) is shown by its tag, as is one that cannot be read (a `message` getter
 * or a proxy trap that throws: `[object Error]`).
 */
export function errorMessage(e: unknown): string {
  let m: string;
  try {
    m = messageOf(e);
  } catch {
    m = tagOf(e);
  }
  return m.length > MAX_ERROR_CHARS ? m.slice(0, MAX_ERROR_CHARS - 1) + '…' : m;
}

function messageOf(e: unknown): string {
  const like = e as { message?: unknown; name?: unknown } | null;
  if (e instanceof Error) {
    const m: unknown = e.message || e.name;
    return typeof m === 'string' ? m : printable(m);
  }
  if (typeof e === 'string') return e;
  // An error from another realm (vm context, worker, test runner) is not `instanceof Error`.
  if (typeof like === 'object' && like !== null && typeof like.message === 'string')
    return (
      like.message ||
      (typeof like.name === 'string'
        ? like.name
        : like.name == null
          ? 'Error'
          : printable(like.name))
    );
  return printable(e);
}

/**
 * When a handler's error is a DelayedError (also one from another realm, e.g. a sandbox or the
 * other module format: by its name and fields), its delay (ms) or time; else undefined.
 */
export function delayOf(e: unknown): number | Date | undefined {
  if (typeof e !== 'object' || e === null) return undefined;
  const d = e as Partial<DelayedError>;
  if (!(e instanceof DelayedError) && d.name !== 'DelayedError') return undefined;
  // (Fields out of what a delay can be — possible from another realm — make it a plain failure.)
  if (typeof d.runAt === 'number' && Number.isFinite(d.runAt)) {
    const at = new Date(d.runAt);
    return runAtProblem('delay', at) ? undefined : at;
  }
  return typeof d.delayMs === 'number' && !delayMsProblem('delay', d.delayMs)
    ? d.delayMs
    : undefined;
}

/**
 * A handler's throw that is a step, not a failure (no attempt counted): `'delayed'` (a
 * DelayedError) or `'rate_limited'` (a RateLimitError); undefined for a failure. What run hooks
 * (metrics, tracing) report it as.
 */
export function stepOf(e: unknown): 'delayed' | 'rate_limited' | undefined {
  if (e instanceof RateLimitError) return 'rate_limited';
  return delayOf(e) === undefined ? undefined : 'delayed';
}
