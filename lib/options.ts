import { invalidOptions } from './errors.js';
import { isPosInt, MAX_DELAY_MS, shown, timerProblem } from './util/checks.js';
import { shownMasked } from './util/secrets.js';
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
import {
  checkBackoff,
  checkGroupOptions,
  checkKeepCompleted,
  checkName,
  checkRateLimit,
  HISTORY_BOUNDS,
  QUEUE_OPTION_KEYS,
} from './option-checks.js';

export {
  checkBackoff,
  checkGroupConcurrency,
  checkGroupName,
  checkName,
  checkRateLimit,
  HISTORY_BOUNDS,
  MAX_GROUP_BYTES,
  MAX_GROUP_CONCURRENCY,
  QUEUE_OPTION_KEYS,
  RATE_LIMIT_BOUNDS,
} from './option-checks.js';

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

/** The largest `maxPayloadBytes`: Redis' largest argument by default (`proto-max-bulk-len`). */
const MAX_PAYLOAD_BYTES = 512 * 1024 * 1024;

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
  // Redis takes no argument over 512 MB (proto-max-bulk-len's default): the payload is one.
  if (isPosInt(o.maxPayloadBytes) && o.maxPayloadBytes > MAX_PAYLOAD_BYTES)
    problems.push(
      `${p('maxPayloadBytes')} must be at most ${MAX_PAYLOAD_BYTES} (512 MiB: Redis takes no larger argument), got ${o.maxPayloadBytes}`,
    );
  if (o.replicaAckTimeoutMs !== undefined && !isPosInt(o.replicaAckTimeoutMs)) {
    problems.push(
      `${p('replicaAckTimeoutMs')} must be a positive integer, got ${shown(o.replicaAckTimeoutMs)}`,
    );
  }
  const window = o.dedupeWindowMs;
  if (
    window !== undefined &&
    !(Number.isSafeInteger(window) && window >= 0 && window <= MAX_DELAY_MS)
  )
    problems.push(
      `${p('dedupeWindowMs')} must be an integer 0..${MAX_DELAY_MS}, got ${shown(window)}`,
    );
  if (o.replicaAcks !== undefined && (!Number.isSafeInteger(o.replicaAcks) || o.replicaAcks < 0)) {
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
      !isPosInt(o.storeResults.ttlMs) ||
      o.storeResults.ttlMs > MAX_DELAY_MS
    ) {
      problems.push(
        `${p('storeResults')} must be false or { ttlMs: an integer 1..${MAX_DELAY_MS} }`,
      );
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
  } else if (o.events) nestedUnknown(p('events'), o.events, ['maxLen'], problems);
  if (o.logger !== undefined && o.logger !== false) {
    if (typeof o.logger !== 'object' || o.logger === null || typeof o.logger.warn !== 'function') {
      problems.push(`${p('logger')} must be false or an object with a warn(message) method`);
    }
  }
  return problems;
}

/**
 * Why `client` is no ioredis client (Redis or Cluster): BullMQ's `{ connection }` given in its
 * place, or anything else. Empty when it is one.
 */
export function clientProblems(client: unknown): string[] {
  const c = client as { sendCommand?: unknown; on?: unknown } | null | undefined;
  if (typeof c?.sendCommand === 'function' && typeof c.on === 'function') return [];
  const bullmq =
    typeof client === 'object' && client !== null && 'connection' in client
      ? ": BullMQ's { connection } is given as an ioredis client here (new Redis(connection))"
      : '';
  return [`client must be an ioredis Redis or Cluster, got ${shownMasked(client)}${bullmq}`];
}

/** `o` checked (every problem at once, after `known`: the client's) with the defaults filled in. */
export function resolveQueueOptions(
  name: string,
  o: WorkQueueOptions = {},
  known: readonly string[] = [],
): ResolvedQueueOptions {
  const problems: string[] = [...known];
  checkName('queue name', name, problems);
  if (typeof o !== 'object' || o === null)
    problems.push(`options must be an object, got ${shownMasked(o)}`);
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
    logger: o.logger === false ? undefined : caught(o.logger ?? console),
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

/**
 * The queue's logger, each call caught: a logger that throws is not thrown into the queue's
 * work (its errors are reported, never thrown: docs/core-api.md). `error` falls back to `warn`
 * for a logger without one; `log` and `debug` go to its own, if any. Its methods are looked up
 * at each call (a spy set later is seen).
 */
function caught(logger: QueueLogger): QueueLogger {
  const call = (message: string, level: 'warn' | 'error' | 'log' | 'debug'): void => {
    try {
      if (level === 'warn') logger.warn(message);
      else if (typeof logger[level] === 'function') logger[level](message);
      else if (level === 'error') logger.warn(message);
    } catch {
      // nothing more to tell
    }
  };
  return {
    warn: (m) => call(m, 'warn'),
    error: (m) => call(m, 'error'),
    log: (m) => call(m, 'log'),
    debug: (m) => call(m, 'debug'),
  };
}
