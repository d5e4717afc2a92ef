import { invalidOptions } from './errors.js';
import { delayMsProblem, isPosInt, MAX_DELAY_MS, shown, timerProblem } from './util/checks.js';
import { nestedUnknown, unknownOptionProblems } from './util/unknown-options.js';
import type {
  BackoffOptions,
  KeepCompleted,
  GroupOptions,
  PayloadCodec,
  QueueLogger,
  RateLimit,
  WorkQueueOptions,
} from './types/index.js';

export interface ResolvedQueueOptions {
  prefix: string;
  codec: PayloadCodec;
  maxPayloadBytes: number;
  leaseMs: number;
  maxAttempts: number;
  backoff: BackoffOptions;
  maxLeaseExpiries: number;
  maxDead: number;
  resultTtlMs: number;
  heartbeatTimeoutMs: number;
  logger: QueueLogger | undefined;
  replicaAcks: number;
  replicaAckTimeoutMs: number;
  commandTimeoutMs: number;
  dedupeWindowMs: number;
  limiter: RateLimit | undefined;
  /** Per-group limits every group gets by default (docs/groups.md); undefined: none set here. */
  groups: GroupOptions | undefined;
  /** The event log's approximate cap; 0 = events off. */
  eventMaxLen: number;
  /** Kept completed jobs; count 0 = none kept (`keepCompleted: false`). */
  keepCompleted: KeepCompleted;
  maxLogLines: number;
}

export const QUEUE_DEFAULTS = {
  prefix: 'wq',
  codec: 'json',
  maxPayloadBytes: 512 * 1024,
  leaseMs: 30_000,
  maxAttempts: 3,
  backoff: { type: 'exponential', delayMs: 1_000, maxDelayMs: 60_000 },
  maxLeaseExpiries: 3,
  maxDead: 10_000,
  heartbeatTimeoutMs: 2_000,
  replicaAcks: 0,
  replicaAckTimeoutMs: 1_000,
  commandTimeoutMs: 5_000,
  dedupeWindowMs: 60_000,
  eventMaxLen: 10_000,
  keepCompleted: { count: 1_000, ageMs: 86_400_000 },
  maxLogLines: 100,
} as const satisfies Partial<ResolvedQueueOptions>;

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
function checkKeepCompleted(what: string, k: unknown, problems: string[]): void {
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

/** A group name: a non-empty string of at most MAX_GROUP_BYTES bytes. */
export function checkGroupName(what: string, v: unknown, problems: string[]): void {
  if (typeof v !== 'string' || v.length === 0 || Buffer.byteLength(v) > MAX_GROUP_BYTES) {
    const got = typeof v === 'string' ? `${Buffer.byteLength(v)} bytes` : JSON.stringify(v);
    problems.push(
      `${what} must be a non-empty string of at most ${MAX_GROUP_BYTES} bytes, got ${got}`,
    );
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
const QUEUE_OPTION_KEYS: Record<keyof WorkQueueOptions, true> = {
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
/** Problems with queue options, one string each (empty when valid). */
export function queueOptionProblems(o: WorkQueueOptions, path = ''): string[] {
  const problems: string[] = [];
  const p = (k: string) => path + k;
  if (o.prefix !== undefined) checkName(p('prefix'), o.prefix, problems);
  if (o.codec !== undefined && !['json', 'string', 'buffer'].includes(o.codec)) {
    problems.push(`${p('codec')} must be 'json', 'string' or 'buffer', got ${shown(o.codec)}`);
  }
  for (const k of [
    'maxPayloadBytes',
    'leaseMs',
    'maxAttempts',
    'maxLeaseExpiries',
    'maxDead',
    'heartbeatTimeoutMs',
    'commandTimeoutMs',
  ] as const) {
    const v = o[k];
    if (v !== undefined && !isPosInt(v)) {
      problems.push(`${p(k)} must be a positive integer, got ${shown(v)}`);
    }
  }
  for (const k of [
    'leaseMs',
    'heartbeatTimeoutMs',
    'commandTimeoutMs',
    'replicaAckTimeoutMs',
  ] as const) {
    // (Only for an integer: one that is not has its own problem.)
    const over = isPosInt(o[k]) ? timerProblem(p(k), o[k]) : undefined;
    if (over) problems.push(over);
  }
  if (o.replicaAckTimeoutMs !== undefined && !isPosInt(o.replicaAckTimeoutMs)) {
    problems.push(
      `${p('replicaAckTimeoutMs')} must be a positive integer, got ${shown(o.replicaAckTimeoutMs)}`,
    );
  }
  if (
    o.dedupeWindowMs !== undefined &&
    (typeof o.dedupeWindowMs !== 'number' ||
      !Number.isInteger(o.dedupeWindowMs) ||
      o.dedupeWindowMs < 0)
  ) {
    problems.push(`${p('dedupeWindowMs')} must be an integer >= 0, got ${shown(o.dedupeWindowMs)}`);
  }
  if (
    o.replicaAcks !== undefined &&
    (typeof o.replicaAcks !== 'number' || !Number.isInteger(o.replicaAcks) || o.replicaAcks < 0)
  ) {
    problems.push(`${p('replicaAcks')} must be an integer >= 0, got ${shown(o.replicaAcks)}`);
  }
  checkBackoff(p('backoff'), o.backoff, problems);
  checkKeepCompleted(p('keepCompleted'), o.keepCompleted, problems);
  if (
    o.maxLogLines !== undefined &&
    (typeof o.maxLogLines !== 'number' ||
      !Number.isInteger(o.maxLogLines) ||
      o.maxLogLines < 0 ||
      o.maxLogLines > HISTORY_BOUNDS.maxLogLines)
  ) {
    problems.push(
      `${p('maxLogLines')} must be an integer 0..${HISTORY_BOUNDS.maxLogLines}, got ${shown(o.maxLogLines)}`,
    );
  }
  if (o.limiter !== undefined) checkRateLimit(p('limiter'), o.limiter, problems);
  if (o.groups !== undefined) checkGroupOptions(p('groups'), o.groups, problems);
  if (o.storeResults !== undefined && o.storeResults !== false) {
    if (
      typeof o.storeResults !== 'object' ||
      o.storeResults === null ||
      !isPosInt(o.storeResults.ttlMs)
    ) {
      problems.push(`${p('storeResults')} must be false or { ttlMs: positive integer }`);
    } else nestedUnknown(p('storeResults'), o.storeResults, ['ttlMs'], problems);
  }
  if (
    o.events !== undefined &&
    o.events !== false &&
    (typeof o.events !== 'object' ||
      o.events === null ||
      (o.events.maxLen !== undefined && !isPosInt(o.events.maxLen)))
  ) {
    problems.push(`${p('events')} must be false or { maxLen?: positive integer }`);
  }
  if (o.logger !== undefined && o.logger !== false) {
    if (typeof o.logger !== 'object' || o.logger === null || typeof o.logger.warn !== 'function') {
      problems.push(`${p('logger')} must be false or an object with a warn(message) method`);
    }
  }
  return problems;
}

export function resolveQueueOptions(name: string, o: WorkQueueOptions = {}): ResolvedQueueOptions {
  const problems: string[] = [];
  checkName('queue name', name, problems);
  if (typeof o !== 'object' || o === null)
    problems.push(`options must be an object, got ${shown(o)}`);
  else problems.push(...unknownOptionProblems(o, QUEUE_OPTION_KEYS), ...queueOptionProblems(o));
  if (problems.length > 0) {
    throw invalidOptions(`invalid options for queue ${JSON.stringify(name)}`, problems);
  }
  return {
    prefix: o.prefix ?? QUEUE_DEFAULTS.prefix,
    codec: o.codec ?? QUEUE_DEFAULTS.codec,
    maxPayloadBytes: o.maxPayloadBytes ?? QUEUE_DEFAULTS.maxPayloadBytes,
    leaseMs: o.leaseMs ?? QUEUE_DEFAULTS.leaseMs,
    maxAttempts: o.maxAttempts ?? QUEUE_DEFAULTS.maxAttempts,
    backoff: o.backoff ?? { ...QUEUE_DEFAULTS.backoff },
    maxLeaseExpiries: o.maxLeaseExpiries ?? QUEUE_DEFAULTS.maxLeaseExpiries,
    maxDead: o.maxDead ?? QUEUE_DEFAULTS.maxDead,
    resultTtlMs: o.storeResults ? o.storeResults.ttlMs : 0,
    heartbeatTimeoutMs: o.heartbeatTimeoutMs ?? QUEUE_DEFAULTS.heartbeatTimeoutMs,
    logger: o.logger === false ? undefined : (o.logger ?? console),
    replicaAcks: o.replicaAcks ?? QUEUE_DEFAULTS.replicaAcks,
    replicaAckTimeoutMs: o.replicaAckTimeoutMs ?? QUEUE_DEFAULTS.replicaAckTimeoutMs,
    commandTimeoutMs: o.commandTimeoutMs ?? QUEUE_DEFAULTS.commandTimeoutMs,
    dedupeWindowMs: o.dedupeWindowMs ?? QUEUE_DEFAULTS.dedupeWindowMs,
    limiter: o.limiter ? { max: o.limiter.max, durationMs: o.limiter.durationMs } : undefined,
    groups: o.groups ? copyGroups(o.groups) : undefined,
    eventMaxLen: o.events === false ? 0 : (o.events?.maxLen ?? QUEUE_DEFAULTS.eventMaxLen),
    keepCompleted:
      o.keepCompleted === false
        ? { count: 0, ageMs: 0 }
        : o.keepCompleted
          ? { count: o.keepCompleted.count, ageMs: o.keepCompleted.ageMs }
          : { ...QUEUE_DEFAULTS.keepCompleted },
    maxLogLines: o.maxLogLines ?? QUEUE_DEFAULTS.maxLogLines,
  };
}

function copyGroups(g: GroupOptions): GroupOptions {
  const out: GroupOptions = {};
  if (g.concurrency !== undefined) out.concurrency = g.concurrency;
  if (g.limiter) out.limiter = { max: g.limiter.max, durationMs: g.limiter.durationMs };
  return out;
}

/**
 * Delay before the next attempt, after `attempt` failed attempts (1-based); with `jitter`, drawn
 * between `delay * (1 - jitter)` and `delay`.
 */
export function backoffDelay(b: BackoffOptions, attempt: number, random = Math.random): number {
  const d =
    b.type === 'fixed'
      ? b.delayMs
      : Math.min(b.delayMs * 2 ** Math.max(0, attempt - 1), b.maxDelayMs ?? MAX_DELAY_MS);
  const jitter = b.jitter ?? 0;
  return jitter > 0 ? Math.round(d * (1 - jitter * random())) : d;
}

/**
 * How often to clean queues by default: a quarter of the smallest heartbeat timeout or lease, so
 * that a dead worker's jobs (or an expired lease) wait at most that much longer than necessary
 * — between 100 ms and 5 s.
 */
export function defaultCleanInterval(
  queues: ReadonlyArray<{ options: Pick<ResolvedQueueOptions, 'heartbeatTimeoutMs' | 'leaseMs'> }>,
): number {
  const shortest = Math.min(
    ...queues.map((q) => Math.min(q.options.heartbeatTimeoutMs, q.options.leaseMs)),
  );
  return Math.max(100, Math.min(5_000, Math.floor(shortest / 4)));
}
