/**
 * A queue's keys by name: the full names of the keys of the table (lib/keys.ts, where every key
 * is named once), for the TypeScript side (scripts name theirs in their `--! keys:` header).
 */
import { dataBucketOf, KEY_TABLE, type KeyName } from '../keys.js';

/** Whose key it is, for keys that exist once per worker, producer session, cancel or registration. */
export interface KeyOwner {
  workerId?: string;
  session?: string;
  ackId?: string;
  registration?: string;
}

export interface QueueKeys {
  /** `<prefix>:{<queue>}:` */
  readonly base: string;
  /** The full name of a key of the table (per-worker keys need `owner.workerId`, …). */
  key(name: KeyName, owner?: KeyOwner): string;
  readonly wake: string;
  /** The notice channel (pause, resume, cancel, lost-lease and flow-stop notices to workers). */
  readonly noticeChannel: string;
  /** The payload bucket of job seq `seq` (a hash seq -> payload; lib/scripts/lib/data.lua). */
  dataBucket(seq: string | number): string;
  /** The payload bucket numbered `b` (a member of `dataBuckets`). */
  dataBucketNamed(b: string): string;
  /** The set of the payload buckets that exist (bucket numbers). */
  readonly dataBuckets: string;
  /** A group's pending zset (docs/groups.md). */
  groupPending(group: string): string;
  readonly workers: string;
  readonly leased: string;
  readonly delayed: string;
  readonly dead: string;
  readonly leaseHolders: string;
  readonly heartbeatRecord: string;
  pending(priority: number): string;
  /** The lease set of one worker; worker '0' means "no worker". */
  workerLeases(workerId: string): string;
  /** A worker's hand-off list: what its idle wait moved out of the wake list. */
  workerHandoffs(workerId: string): string;
  /** A producer's records of its add calls (idempotent re-sends; see add.lua). */
  addCallRecords(session: string): string;
  /** A cancel's acknowledgement by the worker that held the job (see cancel.lua). */
  cancelAck(ackId: string): string;
  /** Channel on which workers announce cancel acknowledgements. */
  readonly cancelAckChannel: string;
  /** A cancelled lease's record: the cancel's acknowledgement id, by lease token (cancel.lua). */
  cancelledLease(token: string): string;
  /** The event log (a stream; lib/events/ reads it). */
  readonly eventLog: string;
  /** Guard of the periodic clean: whoever sets it cleans this round (see `cleanIfDue`). */
  readonly cleanGuard: string;
  /** A flow parent's own key (its children, their results, ...; see `flowParent`). */
  parentKey(kind: ParentKeyKind, seq: string): string;
}

/**
 * The keys of a flow parent (`flowParent` then the kind's letter): the children it awaits, their
 * results, the errors of failed ones, the children cancelled when it failed.
 */
export type ParentKeyKind = 'awaited' | 'results' | 'failures' | 'cancelled';
const PARENT_KEY_LETTER: Record<ParentKeyKind, string> = {
  awaited: 'd',
  results: 'r',
  failures: 'f',
  cancelled: 'x',
};

const OWNER_OF = {
  worker: 'workerId',
  session: 'session',
  ack: 'ackId',
  registration: 'registration',
} as const;

export function queueKeys(prefix: string, queue: string): QueueKeys {
  const base = `${prefix}:{${queue}}:`;
  const key = (name: KeyName, owner: KeyOwner = {}): string => {
    const k = KEY_TABLE[name];
    if (!('per' in k)) return base + k.part;
    const who = owner[OWNER_OF[k.per]];
    if (who === undefined) throw new Error(`key ${name} needs a ${k.per}`);
    return base + k.part + who;
  };
  return {
    base,
    key,
    wake: key('wake'),
    noticeChannel: key('noticeChannel'),
    dataBucket: (seq) => `${key('data')}:${dataBucketOf(String(seq))}`,
    dataBucketNamed: (b) => `${key('data')}:${b}`,
    dataBuckets: key('dataBuckets'),
    groupPending: (group) => `${key('groupPending')}:${group}`,
    workers: key('workers'),
    leased: key('leased'),
    delayed: key('delayed'),
    dead: key('dead'),
    leaseHolders: key('leaseHolders'),
    heartbeatRecord: key('heartbeatRecord'),
    pending: (p) => base + KEY_TABLE.pending.part + p,
    workerLeases: (workerId) => key('workerLeases', { workerId }),
    workerHandoffs: (workerId) => key('workerHandoffs', { workerId }),
    addCallRecords: (session) => key('addCallRecords', { session }),
    cancelAck: (ackId) => key('cancelAck', { ackId }),
    cancelAckChannel: key('cancelAckChannel'),
    cancelledLease: (token) => `${key('cancelledLeases')}:${token}`,
    cleanGuard: key('cleanGuard'),
    eventLog: key('eventLog'),
    parentKey: (kind, seq) => `${key('flowParent')}${PARENT_KEY_LETTER[kind]}:${seq}`,
  };
}
