/**
 * Jobs as scripts return them: stored metadata (see lib/scripts/lib/meta.lua), leased jobs and
 * hand-off entries decoded into `LeasedJob`s, and the small readers of script replies.
 */
import { checkBackoff } from '../options.js';
import type { ResolvedQueueOptions } from '../options.js';
import type { BackoffOptions, Lease, LeasedJob, ParentRef } from '../types/job.js';
import { decode, type Raw } from './codec.js';

/** What turning replies into jobs needs of a queue (its QueueContext has it). */
export interface RecordContext {
  readonly keys: { readonly base: string };
  readonly options: ResolvedQueueOptions;
  /** Every leased job issued (checked when a lease comes back: see QueueContext.checkLease). */
  readonly issued: { add(job: Lease): unknown };
}

export type { Raw };
/** A script's reply (null: a payload a lease by reference found gone, see decodeBatch). */
export type Reply = Array<Raw | number | null>;

/** Meta fields as stored in Redis (see lib/scripts/lib/meta.lua). */
export interface Meta {
  i?: string;
  n?: string;
  p?: number;
  a?: number;
  m?: number;
  b?: BackoffOptions;
  x?: number;
  e?: string;
  r?: string;
  /** 1: the caller id has a dedupe window from its add (its end in the taken zset). */
  t?: number;
  /** The trace context an add hook stored (lib/hooks.ts). */
  c?: string;
  /** The worker of its last attempt that did not complete (processedBy). */
  k?: string;
  /** 1: the job has a log. */
  l?: number;
  /** The job's group (docs/groups.md). */
  g?: string;
  /** A flow child's parent: '<queue>\t<seq>\t<caller id or empty>' (lib/scripts/lib/flows.lua). */
  P?: string;
  /** A flow parent: its delay once its children ended (ms). */
  W?: number;
}

/** A flow child's parent (meta P) as queue and public id, or undefined. */
export function parentOf(meta: Meta): ParentRef | undefined {
  if (meta.P === undefined) return undefined;
  // The caller id is written unescaped, last: it is everything after the second tab (an id may
  // hold tabs; a queue name and a seq never do).
  const [queue = '', seq = '', ...rest] = meta.P.split('\t');
  const cid = rest.join('\t');
  return queue && seq ? { queue, id: cid || seq } : undefined;
}

export const str = (v: Raw | number | null | undefined): string =>
  v === undefined || v === null ? '' : typeof v === 'number' ? String(v) : v.toString();
export const num = (v: Raw | number | null | undefined): number => Number(str(v));

export function rawSize(v: Raw | number | null | undefined): number {
  return Buffer.isBuffer(v) ? v.length : Buffer.byteLength(str(v));
}

/** Stored metadata, sane fields only ({} when it is not a JSON object). */
export function parseMeta(s: string): Meta {
  if (s === '') return {};
  try {
    const parsed: unknown = JSON.parse(s);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? saneMeta(parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/**
 * The fields of stored metadata that have the expected type and range (as the scripts read it,
 * see decode_meta): metadata written by hand must not turn `attempt` into a string or
 * `priority` into 42.
 */
function saneMeta(o: Record<string, unknown>): Meta {
  const meta: Meta = {};
  const count = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;
  for (const k of ['i', 'n', 'e', 'r', 'c', 'k', 'P'] as const)
    if (typeof o[k] === 'string') meta[k] = o[k];
  if (typeof o.g === 'string' && o.g !== '') meta.g = o.g;
  if (count(o.p) && o.p <= 9) meta.p = o.p;
  for (const k of ['a', 'm', 'x', 'l', 'W'] as const) if (count(o[k])) meta[k] = o[k];
  if (o.b !== undefined) {
    const problems: string[] = [];
    checkBackoff('b', o.b, problems);
    if (problems.length === 0) meta.b = o.b as BackoffOptions;
  }
  return meta;
}

/** A job that was leased but cannot run: its lease, and why (it is dead-lettered). */
export interface Unrunnable {
  lease: Lease;
  reason: string;
}

/**
 * A leased job's payload as stored (a Buffer, outside the V8 heap), kept beside its data for a
 * `Worker` (decodeBatch's `keepRaw`): the job handle lets a finished run's data go and decodes
 * it again if it is read (lib/worker/job.ts).
 */
export const RAW_DATA = Symbol('stored payload');
export type WithRaw = { readonly [RAW_DATA]?: Raw | undefined };

/** One leased job from its stored parts (with them, `keepRaw`), or why it cannot be run. */
export function leasedJob<T>(
  ctx: RecordContext,
  seq: string,
  token: string,
  raw: Raw,
  rawMeta: string,
  workerId: string,
  deadline: number,
  addedAt: number,
  startedAt: number,
  keepRaw = false,
): (LeasedJob<T> & WithRaw) | Unrunnable {
  let meta: Meta = {};
  let badMeta: string | undefined;
  if (rawMeta !== '') {
    try {
      const parsed: unknown = JSON.parse(rawMeta);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
        meta = saneMeta(parsed as Record<string, unknown>);
      else badMeta = 'not a JSON object';
    } catch {
      badMeta = `not valid JSON (${Buffer.byteLength(rawMeta)} bytes)`;
    }
  }
  const queueKey = ctx.keys.base;
  const id = meta.i ?? seq;
  // A bare lease only for a job that cannot run (a runnable job is its own lease).
  if (badMeta !== undefined)
    return {
      lease: { queueKey, id, seq, token, workerId, deadline },
      reason: `undecodable metadata: ${badMeta}`,
    };
  let data: T;
  try {
    data = decode<T>(ctx.options, raw);
  } catch {
    // The reason is logged: say what is wrong, never quote the payload (JSON.parse's message does).
    return {
      lease: { queueKey, id, seq, token, workerId, deadline },
      reason: `undecodable: payload is not valid JSON (${rawSize(raw)} bytes)`,
    };
  }
  // A literal with every field (not a spread of `lease`): one object shape for every job.
  const job: LeasedJob<T> & WithRaw = {
    queueKey,
    id,
    seq,
    token,
    workerId,
    deadline,
    data,
    name: meta.n,
    priority: meta.p ?? 5,
    attempt: (meta.a ?? 0) + 1,
    maxAttempts: meta.m ?? ctx.options.maxAttempts,
    leaseExpiries: meta.x ?? 0,
    backoff: meta.b ?? ctx.options.backoff,
    traceContext: meta.c,
    addedAt,
    startedAt,
    group: meta.g,
    parent: meta.P === undefined ? undefined : parentOf(meta),
    [RAW_DATA]: keepRaw ? raw : undefined,
  };
  ctx.issued.add(job);
  return job;
}

/**
 * Head of a lease or complete reply: { now, deadline, nextDue, drain, paused, flags, ids }, then
 * per leased job its payload and meta (lease_reply in lib/scripts/lib/leasing.lua).
 */
export const BATCH_HEAD = 7;
/** Index of the flags of a complete reply: one character '1' or '0' per adopted, completed job. */
export const BATCH_FLAGS = 5;
/** Index of the ids of a lease reply: 'seq token added' per job. */
export const BATCH_IDS = 6;

/** A lease or complete reply decoded (the jobs that cannot run go to `unrunnable`). */
export interface DecodedBatch<T> {
  now: number;
  nextDue: number;
  drain: boolean;
  paused: number;
  jobs: LeasedJob<T>[];
}

/**
 * Decode `reply` (see BATCH_HEAD: 'seq token added' per job in ids, then payload and meta). A job
 * whose payload is null (a lease by reference that found it gone: the job was cancelled or
 * removed) is left out: it no longer exists, so there is nothing to run nor to give back.
 * `keepRaw`: each job keeps its payload as stored too (RAW_DATA, a Worker's).
 */
export function decodeBatch<T>(
  ctx: RecordContext,
  reply: Reply,
  workerId: string,
  unrunnable: Unrunnable[],
  keepRaw = false,
): DecodedBatch<T> {
  const now = num(reply[0]);
  const deadline = num(reply[1]);
  const jobs: LeasedJob<T>[] = [];
  const ids = reply.length > BATCH_HEAD ? str(reply[BATCH_IDS]) : '';
  // Read in place (no array of every id): 'seq token added' per job, space-separated.
  let at = 0;
  const next = (): string => {
    let end = ids.indexOf(' ', at);
    if (end < 0) end = ids.length;
    const id = ids.slice(at, end);
    at = end + 1;
    return id;
  };
  for (let i = BATCH_HEAD; i + 1 < reply.length; i += 2) {
    const seq = next();
    const token = next();
    const added = Number(next() || 0);
    if (reply[i] === null) continue;
    const job = leasedJob<T>(
      ctx,
      seq,
      token,
      reply[i] as Raw,
      str(reply[i + 1]),
      workerId,
      deadline,
      added,
      now,
      keepRaw,
    );
    if ('data' in job) jobs.push(job);
    else unrunnable.push(job);
  }
  return {
    now,
    nextDue: num(reply[2]),
    drain: num(reply[3]) === 1,
    paused: num(reply[4]),
    jobs,
  };
}

/**
 * A wake list entry that is a job handed off to parked workers (docs/internals/hand-off.md):
 * `h<id>:<token>:<deadline>:<priority>:<meta bytes>:<added ms>\n<meta><payload>` (the added time
 * is also the start of its lease). Undefined for a plain
 * wake-up, and for an entry that cannot be decoded: that one is not adopted, so its hand-off
 * lease lapses and clean() puts it back, to be dead-lettered by a regular lease.
 */
export function handedOffJob<T>(
  ctx: RecordContext,
  entry: Buffer,
  workerId: string,
): LeasedJob<T> | undefined {
  const nl = entry.indexOf(10);
  const head = /^h(\d+):(\d+):(\d+):\d:(\d+)(?::(\d+))?$/.exec(
    entry.toString('latin1', 0, Math.max(0, nl)),
  );
  if (nl < 0 || !head) return undefined;
  const metaEnd = nl + 1 + Number(head[4]);
  const added = Number(head[5] ?? 0);
  const job = leasedJob<T>(
    ctx,
    head[1]!,
    head[2]!,
    entry.subarray(metaEnd),
    entry.toString('utf8', nl + 1, metaEnd),
    workerId,
    Number(head[3]),
    added,
    added,
    true, // (a Worker's)
  );
  return 'data' in job ? job : undefined;
}
