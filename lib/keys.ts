/** Redis key layout of one queue. Every key shares the hash tag `{queue}`. */
export const KEY_PARTS = [
  'p0',
  'p1',
  'p2',
  'p3',
  'p4',
  'p5',
  'p6',
  'p7',
  'p8',
  'p9',
  'id',
  'tok',
  'd',
  'm',
  'ids',
  'dl',
  'ls',
  'lt',
  'dead',
  'w',
  'wake',
  'res',
  'rx',
  'pg',
  'wseq',
  'ev',
  'pk',
  'hb',
  'ix',
] as const;

export interface QueueKeys {
  /** `<prefix>:{<queue>}:` */
  readonly base: string;
  /** The 29 fixed keys, in the order every script but add expects (KEYS[1..29]). */
  readonly fixed: readonly string[];
  readonly wake: string;
  readonly events: string;
  readonly data: string;
  readonly workers: string;
  readonly leased: string;
  readonly delayed: string;
  readonly dead: string;
  readonly tokens: string;
  pending(priority: number): string;
  /** The lease set of one worker (KEYS[30]); worker '0' means "no worker". */
  workerLeases(workerId: string): string;
  /** A worker's hand-off list (KEYS[31]): what its idle wait moved out of the wake list. */
  workerHands(workerId: string): string;
  /** A producer's record of its add calls (idempotent re-sends; see add.lua). */
  adds(session: string): string;
  /** A cancel's acknowledgement by the worker that held the job (see cancel.lua). */
  cancelAck(ackId: string): string;
  /** Channel on which workers announce cancel acknowledgements. */
  readonly cancelAcks: string;
  /** Guard of the periodic clean: whoever sets it cleans this round (see `cleanIfDue`). */
  readonly cleanGuard: string;
  /** KEYS of add.lua: eleven fixed keys, then the pending lists of `priorities` (digits). */
  forAdd(session: string, priorities: string): readonly string[];
}

export function queueKeys(prefix: string, queue: string): QueueKeys {
  const base = `${prefix}:{${queue}}:`;
  const fixed = KEY_PARTS.map((p) => base + p);
  const addFixed = ['id', 'd', 'm', 'ids', 'dl', 'wake', 'pk', 'tok', 'ls', 'lt'].map(
    (p) => base + p,
  );
  const addKeys = new Map<string, readonly string[]>();
  const adds = (session: string) => base + 'ik:' + session;
  return {
    base,
    fixed,
    wake: base + 'wake',
    events: base + 'ev',
    data: base + 'd',
    workers: base + 'w',
    leased: base + 'ls',
    delayed: base + 'dl',
    dead: base + 'dead',
    tokens: base + 'lt',
    pending: (p) => base + 'p' + p,
    workerLeases: (w) => base + 'wl:' + w,
    workerHands: (w) => base + 'hx:' + w,
    adds,
    cancelAck: (id) => base + 'ca:' + id,
    cancelAcks: base + 'ev:a',
    cleanGuard: base + 'cleaner',
    forAdd(session, priorities) {
      const memo = session + '/' + priorities;
      let keys = addKeys.get(memo);
      if (!keys) {
        keys = [...addFixed, adds(session), ...Array.from(priorities, (p) => base + 'p' + p)];
        addKeys.set(memo, keys);
      }
      return keys;
    },
  };
}
