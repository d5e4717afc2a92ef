/**
 * Checking and encoding one job for add: its options (unknown keys refused, with the name a
 * BullMQ habit has here) and its payload, as the five values add.lua takes per job.
 */
import { errorMessage, invalid, WorkQueueError, type WorkQueueErrorCode } from '../errors.js';
import { checkBackoff, checkGroupName, type ResolvedQueueOptions } from '../options.js';
import type { AddOptions, AddResult } from '../types/job.js';
import {
  delayMsProblem,
  hasLoneSurrogate,
  MAX_DELAY_MS,
  isPosInt,
  malformedProblem,
  runAtProblem,
  shown,
} from '../util/checks.js';
import { encode, type Raw } from './codec.js';
import type { Meta } from './records.js';

/** Longest trace context a job carries (longer ones are dropped, not stored). */
export const MAX_TRACE_CONTEXT = 512;

const ADD_OPTION_KEYS: ReadonlySet<string> = new Set<keyof AddOptions>([
  'id',
  'name',
  'priority',
  'delayMs',
  'runAt',
  'maxAttempts',
  'backoff',
  'dedupe',
  'group',
]);

/** What a BullMQ habit is called here (unknown `add` options are refused, never ignored). */
const BULLMQ_HINTS: Readonly<Record<string, string>> = {
  jobId: "BullMQ's jobId is `id` here",
  delay: "BullMQ's delay is `delayMs` here",
  attempts: "BullMQ's attempts is `maxAttempts` here",
  lifo: 'jobs run first-in first-out within a priority; use `priority` 0 (highest) to run first',
  removeOnComplete:
    'completed jobs are kept per queue, bounded: the queue option `keepCompleted: { count, ageMs } | false`',
  removeOnFail: 'failed jobs go to the dead-letter set, capped by the queue option `maxDead`',
  timestamp: 'the add time is Redis time, not settable',
  repeat:
    'repeatable jobs are schedules here: queue.upsertSchedule(id, { every | cron }, template)',
  deduplication:
    'a caller `id` dedupes (see the queue option `dedupeWindowMs`); `dedupe: { ttlMs, replace? }` sets its window',
};

/**
 * Every problem of a batch of adds. A payload that cannot be stored names the error: the first
 * ENCODE_FAILED, else the first PAYLOAD_TOO_LARGE; anything else is INVALID_ARGUMENT.
 */
export class AddProblems {
  readonly list: string[] = [];
  private worst: { rank: number; code: WorkQueueErrorCode; problem: string } | undefined;

  push(problem: string): void {
    this.list.push(problem);
  }

  payload(problem: string, code: WorkQueueErrorCode): void {
    const rank = code === 'ENCODE_FAILED' ? 2 : code === 'PAYLOAD_TOO_LARGE' ? 1 : 0;
    if (rank > (this.worst?.rank ?? 0)) this.worst = { rank, code, problem };
    this.push(problem);
  }

  /** The error: the payload's code; its message lists every problem when there are others. */
  error(title: string): WorkQueueError {
    if (!this.worst) return invalid(this.list, title);
    const { code, problem } = this.worst;
    const message = this.list.length > 1 ? `${title}: ${this.list.join('; ')}` : problem;
    return new WorkQueueError(code, message, this.list);
  }
}

/** A dedupe window as add.lua takes it after the schedule (',<ttl>' or ',<ttl>r'), or ''. */
function checkDedupe(d: unknown, id: unknown, at: string, problems: AddProblems): string {
  if (d === undefined) return '';
  if (typeof d !== 'object' || d === null || Array.isArray(d)) {
    problems.push(`${at}dedupe must be an object { ttlMs, replace? }`);
    return '';
  }
  const before = problems.list.length;
  const { ttlMs, replace, ...rest } = d as { ttlMs?: unknown; replace?: unknown };
  for (const key of Object.keys(rest)) {
    problems.push(`${at}dedupe: unknown option ${JSON.stringify(key)}; known: ttlMs, replace`);
  }
  if (id === undefined) problems.push(`${at}dedupe needs a caller id (\`id\`)`);
  if (!isPosInt(ttlMs) || ttlMs > MAX_DELAY_MS) {
    problems.push(
      `${at}dedupe.ttlMs must be an integer 1..${MAX_DELAY_MS} (ms), got ${shown(ttlMs)}`,
    );
  }
  if (replace !== undefined && typeof replace !== 'boolean') {
    problems.push(`${at}dedupe.replace must be a boolean, got ${shown(replace)}`);
  }
  if (problems.list.length > before) return '';
  return `,${String(ttlMs)}${replace === true ? 'r' : ''}`;
}

/** One job as add.lua takes it: caller id, payload, meta JSON, priority, schedule. */
export type AddValues = [string, Raw, string, number, string];

/**
 * A job without options, as add.lua and add_plain.lua take it; undefined when its payload cannot
 * be stored (prepareAdd then says why).
 */
export function plainValues(o: ResolvedQueueOptions, data: unknown): AddValues | undefined {
  try {
    return ['', encode(o, data), '', 5, ''];
  } catch {
    return undefined;
  }
}

/**
 * A job add_plain.lua can add: no caller id, no schedule (nor dedupe window), no group (its meta
 * JSON, written by prepareAdd, has a `"g":` key only then: a name's quotes are escaped).
 */
export const isPlain = (v: AddValues): boolean =>
  v[0] === '' && v[4] === '' && (v[2] === '' || !v[2].includes('"g":'));

/** Whether `opts` sets nothing (the fast path of add; anything else is checked in full). */
export function noOptions(opts: AddOptions | undefined): boolean {
  if (opts === undefined || opts === null) return true;
  if (typeof opts !== 'object' || Array.isArray(opts)) return false;
  for (const _ in opts) return false;
  return true;
}

/** The hint for BullMQ's `add(name, data, opts)` (a third argument). */
export const BULLMQ_ADD_ORDER =
  "add takes (data, opts?): BullMQ's add(name, data, opts) is add(data, { name, ...opts }) here";

/**
 * Why `add(data, opts)` reads as BullMQ's two-argument `add(name, data)`, if it does: a string
 * followed by an object with a key that is neither one of our options nor a BullMQ option we
 * name (that is BullMQ's data). A string followed by `{}` is ours: the string is the data.
 */
function bullmqAddShape(data: unknown, opts: object): string | undefined {
  if (typeof data !== 'string') return undefined;
  const keys = Object.keys(opts);
  if (keys.every((k) => ADD_OPTION_KEYS.has(k) || BULLMQ_HINTS[k] !== undefined)) return undefined;
  // (The string is not shown: here it is the job's data, which no message shows.)
  const given = `{ ${keys.slice(0, 3).join(', ')}${keys.length > 3 ? ', …' : ''} }`;
  return (
    `add(<a string>, ${given}) reads as BullMQ's add(name, data): add takes (data, opts?) here — ` +
    `a named job is add(${given}, { name })`
  );
}

export function prepareAdd(
  o: ResolvedQueueOptions,
  data: unknown,
  given: AddOptions | undefined,
  at: string,
  problems: AddProblems,
  traceContext?: string,
  alone = at === '',
): AddValues | undefined {
  const before = problems.list.length;
  const opts = given ?? {};
  if (typeof opts !== 'object' || Array.isArray(opts)) {
    // (A string is not shown: in BullMQ's add(name, data) it is the data.)
    const got = typeof opts === 'string' ? 'a string' : shown(opts);
    problems.push(`${at}options must be an object, got ${got}`);
    return undefined;
  }
  let unknown = false;
  for (const key of Object.keys(opts)) {
    if (ADD_OPTION_KEYS.has(key)) continue;
    unknown = true;
    const hint = BULLMQ_HINTS[key];
    problems.push(
      `${at}unknown option ${JSON.stringify(key)}${hint ? ` (${hint})` : ''}; known: ${[...ADD_OPTION_KEYS].join(', ')}`,
    );
  }
  // add(data, opts) alone (not addBulk's entries, not a template): BullMQ's add(name, data)?
  const shape = unknown && alone ? bullmqAddShape(data, opts) : undefined;
  if (shape !== undefined) problems.push(shape);
  const { id, name, priority = 5, delayMs, runAt, maxAttempts, backoff, dedupe, group } = opts;
  const window = checkDedupe(dedupe, id, at, problems);
  if (group !== undefined) checkGroupName(`${at}group`, group, problems.list);
  if (id !== undefined) {
    if (typeof id !== 'string' || id.length === 0 || id.length > 256) {
      problems.push(`${at}id must be a string of 1-256 characters`);
    } else if (/^\d+$/.test(id)) {
      problems.push(
        `${at}id ${JSON.stringify(id)} is all digits; numeric ids are reserved for generated ids`,
      );
    } else {
      const malformed = malformedProblem(`${at}id`, id);
      if (malformed) problems.push(malformed);
    }
  }
  if (name !== undefined && (typeof name !== 'string' || name.length === 0 || name.length > 200)) {
    problems.push(`${at}name must be a string of 1-200 characters`);
  } else if (name !== undefined) {
    const malformed = malformedProblem(`${at}name`, name);
    if (malformed) problems.push(malformed);
  }
  if (!Number.isInteger(priority) || priority < 0 || priority > 9) {
    problems.push(
      `${at}priority must be an integer 0 (highest)..9 (lowest), got ${shown(priority)}`,
    );
  }
  const delayProblem = delayMs === undefined ? undefined : delayMsProblem(`${at}delayMs`, delayMs);
  if (delayProblem) problems.push(delayProblem);
  let runAtMs: number | undefined;
  if (runAt !== undefined) {
    runAtMs = runAt instanceof Date ? runAt.getTime() : runAt;
    const p = runAtProblem(`${at}runAt`, runAt);
    if (p) problems.push(p);
    if (delayMs !== undefined) problems.push(`${at}give delayMs or runAt, not both`);
  }
  if (maxAttempts !== undefined && !isPosInt(maxAttempts)) {
    problems.push(`${at}maxAttempts must be a positive integer, got ${shown(maxAttempts)}`);
  }
  const backoffProblems: string[] = [];
  checkBackoff(`${at}backoff`, backoff, backoffProblems);
  backoffProblems.forEach((p) => problems.push(p));
  let payload: Raw = '';
  try {
    payload = encode(o, data);
  } catch (e) {
    const code = e instanceof WorkQueueError ? e.code : 'ENCODE_FAILED';
    problems.payload(`${at}${errorMessage(e)}`, code);
  }
  if (problems.list.length > before) return undefined;
  const meta: Meta = {};
  if (id !== undefined) meta.i = id;
  if (name !== undefined) meta.n = name;
  if (priority !== 5) meta.p = priority;
  if (maxAttempts !== undefined) meta.m = maxAttempts;
  if (backoff !== undefined) meta.b = backoff;
  if (window) meta.t = 1;
  // (A trace context that could not be stored as UTF-8 is dropped, as a too long one.)
  if (traceContext && traceContext.length <= MAX_TRACE_CONTEXT && !hasLoneSurrogate(traceContext))
    meta.c = traceContext;
  if (group !== undefined) meta.g = group;
  let schedule = delayMs ? `d${delayMs}` : runAtMs !== undefined ? `a${Math.floor(runAtMs)}` : '';
  if (window) schedule += window;
  const metaJson = Object.keys(meta).length ? JSON.stringify(meta) : '';
  return [id ?? '', payload, metaJson, priority, schedule];
}

/**
 * The error of an addBulk whose scripts did not all run: the first failed script's error (its
 * code), saying which jobs each script wrote — to retry those of the failed ones (with caller
 * ids, a retry of all of them is safe). A script that failed midway (not one refused at its start,
 * as for memory) may have written some of its jobs: repair() puts them in place. `starts`: the
 * first job of each script.
 */
export function partlyWritten(
  cause: unknown,
  settled: ReadonlyArray<PromiseSettledResult<AddResult[]>>,
  total: number,
  starts: readonly number[],
): WorkQueueError {
  const parts = settled.map((s, k) => {
    const jobs = `jobs ${starts[k]!}-${(starts[k + 1] ?? total) - 1}`;
    if (s.status === 'rejected') return `${jobs}: failed: ${errorMessage(s.reason)}`;
    return `${jobs}: written (ids ${s.value[0]!.id} … ${s.value[s.value.length - 1]!.id})`;
  });
  const failed = settled.filter((s) => s.status === 'rejected').length;
  const code = cause instanceof WorkQueueError ? cause.code : 'SCRIPT_ERROR';
  const message = `${errorMessage(cause)} (addBulk of ${total} jobs in ${settled.length} scripts: ${failed} failed, the others written; see problems)`;
  return new WorkQueueError(code, message, parts);
}
