// The checks of single queue options (names, backoff, keepCompleted, rate limits, groups) and
// the list of every queue option: one problem string each (queueOptionProblems in options.ts).
import type { GroupOptions, WorkQueueOptions } from './types/index.js';
import { delayMsProblem, isPosInt, malformedProblem, MAX_DELAY_MS, shown } from './util/checks.js';
import { nestedUnknown } from './util/unknown-options.js';

/** Largest `keepCompleted.count` and `maxLogLines` (each is what Redis holds per queue/job). */
export const HISTORY_BOUNDS = { keepCount: 1_000_000, maxLogLines: 100_000 } as const;

const NAME_RE = /^[A-Za-z0-9._:-]{1,100}$/;

export function checkName(what: string, v: unknown, problems: string[]): void {
  if (typeof v !== 'string' || !NAME_RE.test(v)) {
    problems.push(
      `${what} must be 1-100 characters of letters, digits, '.', '_', '-' or ':' (no '{', '}' or spaces), got ${shown(v)}`,
    );
  }
}

export function checkBackoff(what: string, b: unknown, problems: string[]): void {
  if (b === undefined) return;
  if (typeof b !== 'object' || b === null) {
    problems.push(`${what} must be an object { type, delayMs, maxDelayMs? }`);
    return;
  }
  const o = b as Record<string, unknown>;
  nestedUnknown(what, o, ['type', 'delayMs', 'maxDelayMs', 'jitter'], problems, {
    delay: "BullMQ's delay is delayMs here",
  });
  if (o.type !== 'fixed' && o.type !== 'exponential') {
    problems.push(`${what}.type must be 'fixed' or 'exponential', got ${shown(o.type)}`);
  }
  const delay = delayMsProblem(`${what}.delayMs`, o.delayMs);
  if (delay) problems.push(delay);
  if (o.maxDelayMs !== undefined && (!isPosInt(o.maxDelayMs) || o.maxDelayMs > MAX_DELAY_MS)) {
    problems.push(
      `${what}.maxDelayMs must be an integer 1..${MAX_DELAY_MS} (ms), got ${shown(o.maxDelayMs)}`,
    );
  }
  if (
    o.jitter !== undefined &&
    (typeof o.jitter !== 'number' || !(o.jitter >= 0 && o.jitter <= 1))
  ) {
    problems.push(`${what}.jitter must be a number 0..1, got ${shown(o.jitter)}`);
  }
}

/** Problems with `keepCompleted` (false, or { count, ageMs } of positive integers). */
export function checkKeepCompleted(what: string, k: unknown, problems: string[]): void {
  if (k === undefined || k === false) return;
  if (typeof k !== 'object' || k === null || Array.isArray(k)) {
    problems.push(`${what} must be false or { count, ageMs }, got ${shown(k)}`);
    return;
  }
  const { count, ageMs } = k as Record<string, unknown>;
  nestedUnknown(what, k as Record<string, unknown>, ['count', 'ageMs'], problems, {
    age: "BullMQ's age (s) is ageMs here",
  });
  if (!isPosInt(count) || count > HISTORY_BOUNDS.keepCount)
    problems.push(
      `${what}.count must be an integer 1..${HISTORY_BOUNDS.keepCount}, got ${shown(count)}`,
    );
  if (!isPosInt(ageMs))
    problems.push(`${what}.ageMs must be a positive integer (ms), got ${shown(ageMs)}`);
}

/** Longest rate-limit window and largest `max` (the rate log holds up to `max` entries). */
export const RATE_LIMIT_BOUNDS = { max: 1_000_000, durationMs: 24 * 3600_000 } as const;

export function checkRateLimit(what: string, r: unknown, problems: string[]): void {
  if (typeof r !== 'object' || r === null) {
    problems.push(`${what} must be an object { max, durationMs }`);
    return;
  }
  const o = r as Record<string, unknown>;
  nestedUnknown(what, o, ['max', 'durationMs'], problems, {
    duration: "BullMQ's duration is durationMs here",
  });
  for (const k of ['max', 'durationMs'] as const) {
    const v = o[k];
    if (!isPosInt(v) || v > RATE_LIMIT_BOUNDS[k]) {
      problems.push(`${what}.${k} must be an integer 1..${RATE_LIMIT_BOUNDS[k]}, got ${shown(v)}`);
    }
  }
}

/** Longest group name, in UTF-8 bytes (a group is named in its keys and in events). */
export const MAX_GROUP_BYTES = 256;

/**
 * A group name: a non-empty string of at most MAX_GROUP_BYTES bytes (BullMQ Pro's `{ id }`
 * object is named as such wherever a group is taken: add, addBulk, templates, flow nodes).
 */
export function checkGroupName(what: string, v: unknown, problems: string[]): void {
  if (typeof v === 'object' && v !== null && 'id' in v) {
    problems.push(`${what} must be a string (BullMQ Pro's group: { id } is group: id here)`);
  } else if (typeof v !== 'string' || v.length === 0 || Buffer.byteLength(v) > MAX_GROUP_BYTES) {
    const got = typeof v === 'string' ? `${Buffer.byteLength(v)} bytes` : JSON.stringify(v);
    problems.push(
      `${what} must be a non-empty string of at most ${MAX_GROUP_BYTES} bytes, got ${got}`,
    );
  } else {
    const malformed = malformedProblem(what, v);
    if (malformed) problems.push(malformed);
  }
}

/** Most jobs of one group leased at once that a limit may name. */
export const MAX_GROUP_CONCURRENCY = 1_000_000;

/** A per-group concurrency: an integer 1..MAX_GROUP_CONCURRENCY. */
export function checkGroupConcurrency(what: string, v: unknown, problems: string[]): void {
  if (!isPosInt(v) || v > MAX_GROUP_CONCURRENCY) {
    problems.push(`${what} must be an integer 1..${MAX_GROUP_CONCURRENCY}, got ${shown(v)}`);
  }
}

/** The `groups` queue option: { concurrency?, limiter? }. */
export function checkGroupOptions(what: string, g: unknown, problems: string[]): void {
  if (typeof g !== 'object' || g === null || Array.isArray(g)) {
    problems.push(`${what} must be an object { concurrency?, limiter? }`);
    return;
  }
  const { concurrency, limiter, ...rest } = g as GroupOptions;
  for (const k of Object.keys(rest)) {
    problems.push(`${what}: unknown option ${JSON.stringify(k)}; known: concurrency, limiter`);
  }
  if (concurrency !== undefined)
    checkGroupConcurrency(`${what}.concurrency`, concurrency, problems);
  if (limiter !== undefined) checkRateLimit(`${what}.limiter`, limiter, problems);
}

/** Every queue option (a Record: the compiler notices an option added to WorkQueueOptions). */
export const QUEUE_OPTION_KEYS: Record<keyof WorkQueueOptions, true> = {
  prefix: true,
  codec: true,
  maxPayloadBytes: true,
  leaseMs: true,
  maxAttempts: true,
  backoff: true,
  maxLeaseExpiries: true,
  maxDead: true,
  storeResults: true,
  keepCompleted: true,
  maxLogLines: true,
  heartbeatTimeoutMs: true,
  commandTimeoutMs: true,
  dedupeWindowMs: true,
  logger: true,
  replicaAcks: true,
  replicaAckTimeoutMs: true,
  limiter: true,
  groups: true,
  events: true,
};
