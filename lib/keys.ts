/**
 * Every Redis key of a queue, named once. A key is `<prefix>:{<queue>}:<part>`: all share the
 * hash tag `{<queue>}`, so one queue lives in one Cluster slot. Scripts name the keys they touch
 * by these names (`--! keys:` in each lib/scripts/*.lua) and see them as `K_<NAME>` (e.g.
 * `leaseHolders` is `K_LEASE_HOLDERS`). The stored `part` of a key never changes with its name.
 * Words used: a job's `seq` is its number (the job counter's value; `Lease.seq`), its public id
 * is its caller id when it has one, else its seq.
 */
export const KEY_TABLE = {
  pending: { part: 'p', doc: 'pending lists p0..p9 (job seqs, FIFO, front = next)' },
  seqCounter: { part: 'id', doc: 'job seq counter (the last seq given)' },
  tokenCounter: { part: 'tok', doc: 'lease token counter (the last token given)' },
  data: {
    part: 'd',
    doc: 'payload buckets d:<b>, hashes seq -> payload for seqs DATA_SPAN·b… (lib/scripts/lib/data.lua)',
  },
  dataBuckets: { part: 'db', doc: 'set of the payload buckets that exist (bucket numbers)' },
  meta: { part: 'm', doc: 'meta hash (seq -> JSON, see lib/scripts/lib/meta.lua)' },
  callerIds: {
    part: 'ids',
    doc: 'caller-id index (caller id -> seq, or ~<until ms> once completed, ~<until ms>:<seq> while kept)',
  },
  delayed: { part: 'dl', doc: 'delayed zset (seq -> due ms)' },
  leased: {
    part: 'ls',
    doc: 'leased zset (seq -> lease deadline ms), and its pad at +inf (LEASE_PAD)',
  },
  leaseHolders: {
    part: 'lt',
    doc: 'lease hash (seq -> "<token>:<holder>"), and its pad (LEASE_PAD)',
  },
  dead: { part: 'dead', doc: 'dead-letter zset (seq -> died ms)' },
  workers: { part: 'w', doc: 'workers zset (worker id -> last heartbeat ms)' },
  workerIdCounter: { part: 'wseq', doc: 'worker id counter (the last worker id given)' },
  heartbeatRecord: {
    part: 'hb',
    doc: 'heartbeat record hash (b: last beat of any worker, s: beats judged since, q: first look at a silence, l: workers that left lately, whose late beats are refused)',
  },
  parked: { part: 'pk', doc: 'parked workers zset (worker id -> parked until ms)' },
  reclaimedWorkers: {
    part: 'rw',
    doc: 'workers reclaimed while parked (worker id -> parked until ms): a frozen one may still have its idle wait blocked in Redis, which takes wake-ups; clean() sweeps them back until then',
  },
  wake: {
    part: 'wake',
    doc: 'wake list (wake-up tokens and hand-offs; docs/internals/hand-off.md)',
  },
  results: { part: 'res', doc: 'results hash (public id -> result)' },
  resultExpiries: { part: 'rx', doc: 'result expiry zset (public id -> until ms)' },
  progress: { part: 'pg', doc: 'progress hash (seq -> value)' },
  keptCallerIds: {
    part: 'ix',
    doc: 'caller ids kept taken after completion (zset caller id -> until ms)',
  },
  noticeChannel: {
    part: 'ev',
    doc: 'notice channel (pause, resume, group pause, cancel, lost-lease and flow-stop notices to workers)',
  },
  progressChannel: { part: 'ev:p', doc: 'progress channel ("<seq>:<value>")' },
  eventLog: { part: 'es', doc: 'event log stream (capped; lib/scripts/lib/events.lua)' },
  schedules: {
    part: 'sc',
    doc: 'schedules hash (schedule id -> record JSON, see lib/scripts/lib/schedules.lua)',
  },
  schedulePayloads: {
    part: 'sc:d',
    doc: 'schedule payloads hash (schedule id -> template payload)',
  },
  schedulesDue: {
    part: 'sc:n',
    doc: 'schedules zset (schedule id -> make its next ticks by ms)',
  },
  scheduleIds: { part: 'sc:i', doc: 'schedule ids zset (all scores 0: listed by id)' },
  scheduleLatestJobs: {
    part: 'sc:r',
    doc: 'schedules hash (schedule id -> <seq>:<tick ms> of its latest fired tick: skipIfRunning, lastFireAt)',
  },
  // History (docs/history.md; lib/scripts/lib/history.lua, lib/scripts/lib/completed.lua).
  addedTimes: {
    part: 't',
    doc: 'time buckets t:<b>, strings of u48 slots per seq of payload bucket b: added ms, started ms (lib/scripts/lib/times.lua)',
  },
  completedJobs: { part: 'cj', doc: 'kept completed jobs zset (seq -> finished ms)' },
  completedInfo: {
    part: 'ci',
    doc: 'kept completed jobs hash (seq -> "<worker id>/<lease token>:<attempts made>" then ":<result>" when kept)',
  },
  jobLogs: {
    part: 'lg',
    doc: "job logs lg:<seq> (a list, newest kept) and lg:<seq>:d (lines dropped), in the queue's slot",
  },
  metricsCompleted: {
    part: 'mt:completed',
    doc: 'per-minute counts of completed jobs: a string of 1 440 u32 pairs (minute, count)',
  },
  metricsFailed: {
    part: 'mt:failed',
    doc: 'per-minute counts of failed attempts, as metricsCompleted',
  },
  metricsDead: {
    part: 'mt:dead',
    doc: 'per-minute counts of dead-lettered jobs, as metricsCompleted',
  },
  workerInfo: {
    part: 'wi',
    doc: 'worker info hash (worker id -> "<started ms>:<JSON host, pid, name, concurrency>")',
  },
  // Flow control (docs/flow-control.md; lib/scripts/lib/flow_control.lua).
  flowControl: {
    part: 'fl',
    doc: 'flow control hash (p paused version, v version, u no leases until ms, m/d rate max per d ms, c concurrency)',
  },
  rateLog: {
    part: 'rl',
    doc: 'rate log zset (lease token -> leased at ms, the last window only)',
  },
  // Groups (docs/groups.md; lib/scripts/lib/groups.lua). Per-group keys are named in Lua from a
  // prefix passed in KEYS (gp:<group>, gr:<group>): they share the queue's hash tag, so its slot.
  groupPending: {
    part: 'gp',
    doc: "group pending zsets gp:<group> (seq -> prio·1e15 + place in line; the group's waiting jobs)",
  },
  groupsReady: {
    part: 'gq',
    doc: "ready groups zset (group -> head prio·1e15 + turn; '' = the ungrouped lists)",
  },
  groupTurnCounter: { part: 'gt', doc: 'group turn counter (the last turn given)' },
  groupRunning: { part: 'gn', doc: 'group running hash (group -> jobs leased)' },
  groupLimits: {
    part: 'gl',
    doc: "group limits hash (group -> JSON c concurrency, m/d rate max per d ms; '' = the queue's defaults)",
  },
  groupsLimited: {
    part: 'gw',
    doc: 'rate-limited groups zset (group -> no leases until ms)',
  },
  groupRate: {
    part: 'gr',
    doc: 'group rate logs gr:<group> (zsets lease token -> leased at ms, the last window only)',
  },
  groupsPaused: { part: 'gz', doc: 'paused groups set' },
  groups: {
    part: 'ga',
    doc: 'groups zset (groups with pending, running or paused state, all scores 0: listed by name)',
  },
  groupedPending: {
    part: 'gc',
    doc: 'grouped pending counts hash (priority -> grouped jobs pending)',
  },
  // Flows (docs/internals/flows.md; lib/scripts/lib/flows.lua). Per-parent keys are named in Lua
  // from their passed prefix (`<prefix>:<parent seq>`): they share the queue's hash tag.
  waitingChildren: {
    part: 'wc',
    doc: 'parents waiting for their children (zset seq -> seq: the order they were added in)',
  },
  flowParent: {
    part: 'f',
    doc: "a parent's own keys, <key><k>:<seq> with k: d the children it still awaits (hash '<queue>:<seq>' -> policy f|i|r then the child's public id), r their results and f the errors of failed ones (hashes '<queue>:<public id>' -> value), x what it awaited when it failed (as d), e notices that came before it was written; a prefix: they share the queue's hash tag",
  },
  flowOutbox: {
    part: 'fo',
    doc: "notices of this queue's ended children (child seq -> '<outcome c|f|x>\\t<parent queue>\\t<parent seq>\\t<payload>')",
  },
  flowOutboxAt: { part: 'fo:t', doc: 'notices not delivered yet (zset child seq -> written ms)' },
  flowRechecks: {
    part: 'fo:r',
    doc: 'notices delivered once, delivered again then dropped (zset child seq -> due ms)',
  },
  flowCancels: {
    part: 'fc',
    doc: "children to cancel, of this queue's parents that failed or were cancelled (zset '<queue>:<seq>' -> since ms)",
  },
  flowReserved: {
    part: 'fv',
    doc: "seqs reserved by a flow add not written yet (zset '<first>:<last>:<reserved ms>' -> first)",
  },
  flowClaims: {
    part: 'fk',
    doc: "roots' caller ids claimed by a flow add on a Cluster until it writes them (hash caller id -> '<add token>\\t<first>:<last>\\t<ms>': the root level's reservation, while which the claim lives, a minute at most)",
  },
  workerLeases: { part: 'wl:', doc: "the calling worker's lease set (seqs)", per: 'worker' },
  workerHandoffs: { part: 'hx:', doc: "the calling worker's hand-off list", per: 'worker' },
  addCallRecords: {
    part: 'ik:',
    doc: "the producer's add-call records (call number -> what it did; idempotent re-sends)",
    per: 'session',
  },
  cancelledLeases: {
    part: 'cx',
    doc: "cancelled leases cx:<token>, strings: the cancel's acknowledgement id, for the canceller's wait (a holder that learns the cancel from a renewal acknowledges it)",
  },
  workerRegistration: {
    part: 'wr:',
    doc: "a worker registration's id for a while (a registration re-sent after its reply was lost answers it)",
    per: 'registration',
  },
  cancelCall: {
    part: 'cc:',
    doc: "a cancel call's answer for a while (a cancel re-sent after its reply was lost answers the same)",
    per: 'ack',
  },
  // Keys no script touches (scripts: false; a `--! keys:` header may not name them).
  cancelAck: {
    part: 'ca:',
    doc: "a cancel's acknowledgement by the worker that held the job (lib/queue/cancel-acks.ts)",
    per: 'ack',
    scripts: false,
  },
  cancelAckChannel: {
    part: 'ev:a',
    doc: 'channel on which workers announce cancel acknowledgements',
    scripts: false,
  },
  cleanGuard: {
    part: 'cleaner',
    doc: 'guard of the periodic clean: whoever sets it cleans this round (see `cleanIfDue`)',
    scripts: false,
  },
} as const;

/**
 * Seqs per payload bucket: a bucket of this many small payloads stays a listpack in Redis' default
 * configuration (hash-max-listpack-entries 128). Scripts see it as DATA_SPAN.
 */
export const DATA_SPAN = 128;

/**
 * A member of the leased set and a field of the lease hash that is never a job (`K_LEASED`,
 * `K_LEASE_HOLDERS`): longer than Redis' zset-/hash-max-listpack-value (64 bytes), it keeps both
 * in their hashed encodings. A listpack finds a member by walking every entry, so a lease's
 * `ZADD`/`HSET` and a completion's `HMGET`/`ZREM` cost O(jobs leased) each: at c=50 (~100 leased)
 * ~20% of Redis' time per job. Written by every lease call (lease_jobs), at score +inf (no
 * deadline passes it); what counts or lists the leased jobs leaves it out; both go when nothing
 * is leased (lease_unpad). Scripts see it as LEASE_PAD.
 */
export const LEASE_PAD =
  '~pad: keeps this key in its hashed encoding (not a job; lib/keys.ts LEASE_PAD)';

/** The payload bucket number of job seq `seq` ('x' for seqs that are not counter values). */
export function dataBucketOf(seq: string): string {
  return /^\d+$/.test(seq) ? String(Math.floor(Number(seq) / DATA_SPAN)) : 'x';
}

/** The name of a key of the table. */
export type KeyName = keyof typeof KEY_TABLE;

/** The keys a script may name in its `--! keys:` header. */
export type ScriptKeyName = {
  [K in KeyName]: (typeof KEY_TABLE)[K] extends { scripts: false } ? never : K;
}[KeyName];
