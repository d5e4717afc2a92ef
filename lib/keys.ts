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
] as const;

export interface QueueKeys {
  /** `<prefix>:{<queue>}:` */
  readonly base: string;
  /** The 27 fixed keys, in the order every script but add expects (KEYS[1..27]). */
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
  /** The lease set of one worker (KEYS[28]); worker '0' means "no worker". */
  workerLeases(workerId: string): string;
  /** A worker's own wake-up key, watched with the wake list: close() ends its wait there. */
  workerWake(workerId: string): string;
  /** KEYS of add.lua: ten fixed keys, then the pending lists of `priorities` (digits). */
  forAdd(priorities: string): readonly string[];
}

export function queueKeys(prefix: string, queue: string): QueueKeys {
  const base = `${prefix}:{${queue}}:`;
  const fixed = KEY_PARTS.map((p) => base + p);
  const addFixed = ['id', 'd', 'm', 'ids', 'dl', 'wake', 'pk', 'tok', 'ls', 'lt'].map(
    (p) => base + p,
  );
  const addKeys = new Map<string, readonly string[]>();
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
    workerWake: (w) => base + 'ww:' + w,
    forAdd(priorities) {
      let keys = addKeys.get(priorities);
      if (!keys) {
        keys = [...addFixed, ...Array.from(priorities, (p) => base + 'p' + p)];
        addKeys.set(priorities, keys);
      }
      return keys;
    },
  };
}
