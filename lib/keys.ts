/**
 * Every Redis key of a queue, named once. A key is `<prefix>:{<queue>}:<part>`: all share the
 * hash tag `{<queue>}`, so one queue lives in one Cluster slot. Scripts name the keys they touch
 * by these names (`--! keys:` in each lib/scripts/*.lua) and see them as `K_<NAME>`.
 */
export const KEY_TABLE = {
  pending: { part: 'p', doc: 'pending lists p0..p9 (job ids, FIFO, front = next)' },
  id: { part: 'id', doc: 'job id counter' },
  tok: { part: 'tok', doc: 'lease token counter' },
  data: {
    part: 'd',
    doc: 'payload buckets d:<b>, hashes id -> payload for ids DATA_SPAN·b… (lib/scripts/lib/data.lua)',
  },
  dataBuckets: { part: 'db', doc: 'set of the payload buckets that exist (bucket numbers)' },
  meta: { part: 'm', doc: 'meta hash (id -> JSON, see lib/scripts/lib/meta.lua)' },
  ids: { part: 'ids', doc: 'caller-id index (caller id -> id, or ~<until ms> once completed)' },
  delayed: { part: 'dl', doc: 'delayed zset (id -> due ms)' },
  leased: { part: 'ls', doc: 'leased zset (id -> lease deadline ms)' },
  tokens: { part: 'lt', doc: 'lease hash (id -> "<token>:<holder>")' },
  dead: { part: 'dead', doc: 'dead-letter zset (id -> died ms)' },
  workers: { part: 'w', doc: 'workers zset (worker id -> last heartbeat ms)' },
  wake: {
    part: 'wake',
    doc: 'wake list (wake-up tokens and hand-offs; docs/internals/hand-off.md)',
  },
  res: { part: 'res', doc: 'results hash (public id -> result)' },
  rexp: { part: 'rx', doc: 'result expiry zset (public id -> until ms)' },
  prog: { part: 'pg', doc: 'progress hash (id -> value)' },
  wseq: { part: 'wseq', doc: 'worker id counter' },
  ev: { part: 'ev', doc: 'event channel (cancel and lost-lease notices)' },
  evProgress: { part: 'ev:p', doc: 'progress channel' },
  events: { part: 'es', doc: 'event log stream (capped; lib/scripts/lib/events.lua)' },
  parked: { part: 'pk', doc: 'parked workers zset (worker id -> parked until ms)' },
  hb: { part: 'hb', doc: 'heartbeat hash (b: last beat of any worker, s: judged since)' },
  taken: { part: 'ix', doc: 'caller ids kept after completion (zset caller id -> until ms)' },
  sched: { part: 'sc', doc: 'schedules hash (schedule id -> record JSON, see lib/schedules)' },
  schedData: { part: 'sc:d', doc: 'schedule payloads hash (schedule id -> template payload)' },
  schedDue: { part: 'sc:n', doc: 'schedules zset (schedule id -> materialize next ticks by ms)' },
  schedIds: { part: 'sc:i', doc: 'schedule ids zset (all scores 0: listed by id)' },
  schedRun: {
    part: 'sc:r',
    doc: 'schedules hash (schedule id -> job of its latest fired tick, for skipIfRunning)',
  },
  // Flow control (docs/flow-control.md; lib/scripts/lib/flow.lua).
  flow: {
    part: 'fl',
    doc: 'flow hash (p paused version, v version, u no leases until ms, m/d rate max per d ms, c concurrency)',
  },
  rate: { part: 'rl', doc: 'rate log zset (lease token -> leased at ms, the last window only)' },
  wleases: { part: 'wl:', doc: "the calling worker's lease set", per: 'worker' },
  hands: { part: 'hx:', doc: "the calling worker's hand-off list", per: 'worker' },
  adds: {
    part: 'ik:',
    doc: "the producer's add-call record (idempotent re-sends)",
    per: 'session',
  },
} as const;

/**
 * Ids per payload bucket: a bucket of this many small payloads stays a listpack in Redis' default
 * configuration (hash-max-listpack-entries 128). Scripts see it as DATA_SPAN.
 */
export const DATA_SPAN = 128;

/** The payload bucket number of a job id ('x' for ids that are not counter values). */
export function dataBucketOf(id: string): string {
  return /^\d+$/.test(id) ? String(Math.floor(Number(id) / DATA_SPAN)) : 'x';
}

/** The name of a key of the table. */
export type KeyName = keyof typeof KEY_TABLE;

/** Whose key it is, for keys that exist once per worker or per producer session. */
export interface KeyOwner {
  workerId?: string;
  session?: string;
}

export interface QueueKeys {
  /** `<prefix>:{<queue>}:` */
  readonly base: string;
  /** The full name of a key of the table (per-worker keys need `owner.workerId`, …). */
  key(name: KeyName, owner?: KeyOwner): string;
  readonly wake: string;
  readonly events: string;
  /** The payload bucket of job id `id` (a hash id -> payload; lib/scripts/lib/data.lua). */
  dataBucket(id: string | number): string;
  /** The payload bucket numbered `b` (a member of `dataBuckets`). */
  dataBucketNamed(b: string): string;
  /** The set of the payload buckets that exist (bucket numbers). */
  readonly dataBuckets: string;
  readonly workers: string;
  readonly leased: string;
  readonly delayed: string;
  readonly dead: string;
  readonly tokens: string;
  readonly heartbeats: string;
  pending(priority: number): string;
  /** The lease set of one worker; worker '0' means "no worker". */
  workerLeases(workerId: string): string;
  /** A worker's hand-off list: what its idle wait moved out of the wake list. */
  workerHands(workerId: string): string;
  /** A producer's record of its add calls (idempotent re-sends; see add.lua). */
  adds(session: string): string;
  /** A cancel's acknowledgement by the worker that held the job (see cancel.lua). */
  cancelAck(ackId: string): string;
  /** Channel on which workers announce cancel acknowledgements. */
  readonly cancelAcks: string;
  /** The event log (a stream; lib/events/ reads it). */
  readonly eventLog: string;
  /** Guard of the periodic clean: whoever sets it cleans this round (see `cleanIfDue`). */
  readonly cleanGuard: string;
}

export function queueKeys(prefix: string, queue: string): QueueKeys {
  const base = `${prefix}:{${queue}}:`;
  const key = (name: KeyName, owner: KeyOwner = {}): string => {
    const k = KEY_TABLE[name];
    if (!('per' in k)) return base + k.part;
    const who = k.per === 'worker' ? owner.workerId : owner.session;
    if (who === undefined) throw new Error(`key ${name} needs a ${k.per}`);
    return base + k.part + who;
  };
  return {
    base,
    key,
    wake: key('wake'),
    events: key('ev'),
    dataBucket: (id) => `${key('data')}:${dataBucketOf(String(id))}`,
    dataBucketNamed: (b) => `${key('data')}:${b}`,
    dataBuckets: key('dataBuckets'),
    workers: key('workers'),
    leased: key('leased'),
    delayed: key('delayed'),
    dead: key('dead'),
    tokens: key('tokens'),
    heartbeats: key('hb'),
    pending: (p) => base + KEY_TABLE.pending.part + p,
    workerLeases: (workerId) => key('wleases', { workerId }),
    workerHands: (workerId) => key('hands', { workerId }),
    adds: (session) => key('adds', { session }),
    // Not touched by scripts: a cancel's acknowledgement and its channel, the clean guard.
    cancelAck: (id) => base + 'ca:' + id,
    cancelAcks: base + 'ev:a',
    cleanGuard: base + 'cleaner',
    eventLog: key('events'),
  };
}
