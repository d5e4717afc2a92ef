/**
 * The checks run after EVERY step of test/integration/model/model.test.ts:
 * (b) the structural invariants of the README's Guarantees, read straight from the Redis keys;
 * the keys equal to what the model says, entry for entry (lists in order, tombstones too);
 * (a) getJob of the ids ever added; (e) counts().
 */
import { expect } from '@jest/globals';
import type { Redis } from 'ioredis';
import type { WorkQueue } from '../../../lib/index.js';
import { LEASE_PAD } from '../../../lib/keys.js';
import type { Model, Payload } from './model.js';
import { SPAN } from './groups.js';

export interface Real {
  q: WorkQueue<Payload>;
  /** An observer connection (reads keys, Redis TIME). */
  redis: Redis;
  /** A fresh connection that its user disconnects (a dying client gets one). */
  newClient(): Redis;
  /** Count a case that came up (printed with MODEL_STATS=1: what the runs exercised). */
  note(what: string): void;
}

/** The queue's job keys, read in one MULTI (a consistent snapshot). */
export interface Snapshot {
  data: string[];
  lists: string[][];
  delayed: Record<string, number>;
  leased: Record<string, number>;
  tokens: Record<string, string>;
  dead: string[];
  meta: string[];
  progress: Record<string, string>;
  ids: Record<string, string>;
  /** Kept completed jobs (seqs) and the seqs with a kept job's info. */
  completed: string[];
  info: string[];
  groups: GroupKeys;
  /** Flow parents waiting for their children. */
  waiting: string[];
}

/** The flow notice keys (docs/internals/flows.md), scores as numbers. */
interface FlowKeys {
  undelivered: Record<string, number>;
  rechecks: Record<string, number>;
  cancels: Record<string, number>;
  outbox: string[];
}

/** The groups' keys (lib/scripts/lib/groups.lua): scores and counts as numbers. */
export interface GroupKeys {
  /** group -> { seq: score } of its pending zset */
  pending: Record<string, Record<string, number>>;
  ready: Record<string, number>;
  running: Record<string, number>;
  listed: string[];
  paused: string[];
  counts: Record<string, number>;
}

/** Every group's pending zset (of the groups listed, ready or running) and the group keys. */
const GROUP_KEYS = `local names, seen = {}, {}
local function add(g) if not seen[g] then seen[g] = true names[#names + 1] = g end end
for _, g in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do add(g) end
local ready = redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')
for i = 1, #ready, 2 do if ready[i] ~= '' then add(ready[i]) end end
local running, all = {}, redis.call('HGETALL', KEYS[4])
for i = 1, #all, 2 do
  -- (field '': the pad that keeps the hash a hash table, lib/scripts/lib/groups.lua)
  if all[i] ~= '' then add(all[i]) running[#running + 1] = all[i] running[#running + 1] = all[i + 1] end
end
local pending = {}
for _, g in ipairs(names) do
  local z = redis.call('ZRANGE', KEYS[1] .. ':' .. g, 0, -1, 'WITHSCORES')
  if #z > 0 then pending[g] = z end
end
return cjson.encode({ pending = pending, ready = ready, running = running,
  listed = redis.call('ZRANGE', KEYS[2], 0, -1), paused = redis.call('SMEMBERS', KEYS[5]),
  counts = redis.call('HGETALL', KEYS[6]) })`;

function groupKeys(json: string): GroupKeys {
  const raw = JSON.parse(json) as {
    pending: Record<string, string[]> | unknown[];
    ready: string[];
    running: string[];
    listed: string[] | Record<string, never>;
    paused: string[] | Record<string, never>;
    counts: string[];
  };
  // (cjson encodes an empty table as {}: read every list through this)
  const list = (v: unknown): string[] => (Array.isArray(v) ? (v as string[]) : []);
  const pairs = (v: unknown): Record<string, number> => {
    const a = list(v);
    const out: Record<string, number> = {};
    for (let i = 0; i < a.length; i += 2) out[a[i]!] = Number(a[i + 1]);
    return out;
  };
  const pending: Record<string, Record<string, number>> = {};
  if (!Array.isArray(raw.pending))
    for (const [g, z] of Object.entries(raw.pending)) pending[g] = pairs(z);
  return {
    pending,
    ready: pairs(raw.ready),
    running: pairs(raw.running),
    listed: list(raw.listed).sort(),
    paused: list(raw.paused).sort(),
    counts: pairs(raw.counts),
  };
}

const PAYLOAD_IDS = `local out = {}
for _, b in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  for _, id in ipairs(redis.call('HKEYS', KEYS[2] .. ':' .. b)) do
    out[#out + 1] = id
  end
end
return out`;

/** `o` without the pad of the leased set / lease hash (LEASE_PAD: not a job). */
function withoutPad<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => k !== LEASE_PAD));
}

export async function snapshot(r: Real): Promise<Snapshot & { flows: FlowKeys }> {
  const k = r.q.keys;
  // Payload ids of every bucket of the set (lib/scripts/lib/data.lua), read in the same MULTI.
  const m = r.redis.multi().eval(PAYLOAD_IDS, 2, k.dataBuckets, k.key('data'));
  for (let p = 0; p <= 9; p++) m.lrange(k.pending(p), 0, -1);
  m.zrange(k.delayed, '0', '-1', 'WITHSCORES')
    .zrange(k.leased, '0', '-1', 'WITHSCORES')
    .hgetall(k.leaseHolders)
    .zrange(k.dead, '0', '-1')
    .hkeys(k.key('meta'))
    .hgetall(k.key('progress'))
    .hgetall(k.key('callerIds'))
    .zrange(k.key('completedJobs'), '0', '-1')
    .hkeys(k.key('completedInfo'))
    .eval(
      GROUP_KEYS,
      6,
      k.key('groupPending'),
      k.key('groups'),
      k.key('groupsReady'),
      k.key('groupRunning'),
      k.key('groupsPaused'),
      k.key('groupedPending'),
    )
    .zrange(k.key('waitingChildren'), '0', '-1')
    .zrange(k.key('flowOutboxAt'), '0', '-1', 'WITHSCORES')
    .zrange(k.key('flowRechecks'), '0', '-1', 'WITHSCORES')
    .zrange(k.key('flowCancels'), '0', '-1', 'WITHSCORES')
    .hkeys(k.key('flowOutbox'));
  const replies = (await m.exec())!.map(([err, v]) => {
    if (err) throw err;
    return v;
  });
  const scores = (flat: unknown): Record<string, number> => {
    const out: Record<string, number> = {};
    const a = flat as string[];
    for (let i = 0; i < a.length; i += 2) out[a[i]] = Number(a[i + 1]);
    return out;
  };
  // The pads stay only while some job is leased (lease_unpad at every removal from the set).
  for (const [what, members] of [
    ['leased set', Object.keys(scores(replies[12]))],
    ['lease hash', Object.keys(replies[13] as Record<string, string>)],
  ] as const) {
    if (members.length === 1 && members[0] === LEASE_PAD)
      throw new Error(`the ${what} holds its pad (LEASE_PAD) and no job`);
  }
  return {
    data: (replies[0] as string[]).sort(),
    lists: replies.slice(1, 11) as string[][],
    delayed: scores(replies[11]),
    // (Without the pad the leased set and the lease hash hold: not a job, LEASE_PAD.)
    leased: withoutPad(scores(replies[12])),
    tokens: withoutPad(replies[13] as Record<string, string>),
    dead: (replies[14] as string[]).sort(),
    meta: replies[15] as string[],
    progress: replies[16] as Record<string, string>,
    // A caller id of a kept job is '~<until>:<seq>': the time is the job's, not modelled here.
    ids: Object.fromEntries(
      Object.entries(replies[17] as Record<string, string>).map(([c, v]) => [
        c,
        v.replace(/^~\d+:/, '~:'),
      ]),
    ),
    completed: (replies[18] as string[]).sort(),
    info: (replies[19] as string[]).sort(),
    groups: groupKeys(replies[20] as string),
    waiting: (replies[21] as string[]).sort(),
    flows: {
      undelivered: scores(replies[22]),
      rechecks: scores(replies[23]),
      cancels: scores(replies[24]),
      outbox: (replies[25] as string[]).sort(),
    },
  };
}

/**
 * (b) the README's guarantee 3, from the keys alone: a job with a payload is in exactly one place (a
 * pending list once, the delayed set, the leased set with a token, or the dead set); a list
 * entry without a payload is a cancelled job's tombstone (allowed); nothing else refers to a
 * job without a payload. Returns the violations (empty when none).
 */
export function invariantViolations(s: Snapshot): string[] {
  const bad: string[] = [];
  const data = new Set(s.data);
  const places = new Map<string, string[]>();
  const at = (id: string, where: string) => places.set(id, [...(places.get(id) ?? []), where]);
  s.lists.forEach((list, p) => list.forEach((id) => at(id, `p${p}`)));
  for (const [g, z] of Object.entries(s.groups.pending))
    for (const id of Object.keys(z)) at(id, `gp:${g}`);
  for (const id of Object.keys(s.delayed)) at(id, 'dl');
  for (const id of Object.keys(s.leased)) at(id, 'ls');
  for (const id of s.dead) at(id, 'dead');
  for (const id of s.completed) at(id, 'cj');
  for (const id of s.waiting) at(id, 'wc');
  for (const id of data) {
    const where = places.get(id) ?? [];
    if (where.length !== 1) bad.push(`job ${id} is in ${where.length} places: ${where.join(',')}`);
    if (id in s.leased !== id in s.tokens) bad.push(`job ${id}: ls and lt disagree`);
  }
  const refs: Array<[string, string[]]> = [
    ['dl', Object.keys(s.delayed)],
    ['ls', Object.keys(s.leased)],
    ['lt', Object.keys(s.tokens)],
    ['dead', s.dead],
    ['wc', s.waiting],
    ['m', s.meta],
    ['pg', Object.keys(s.progress)],
    ['cj', s.completed],
    ['ci', s.info],
    ['ids (value)', Object.values(s.ids).map((v) => v.replace(/^~:/, ''))],
  ];
  for (const [key, ids] of refs)
    for (const id of ids) if (!data.has(id)) bad.push(`${key} refers to ${id}, which has no data`);
  if (s.info.join() !== s.completed.join()) bad.push('ci and cj name different jobs');
  return bad;
}

/** What the keys must hold according to the model (exact, tombstones and order included). */
function expectedKeys(m: Model): Omit<Snapshot, 'meta'> {
  const kept = [...m.kept.jobs.keys()].sort();
  const e: Omit<Snapshot, 'meta'> = {
    waiting: [...m.jobs.values()]
      .filter((j) => j.state === 'waiting-children')
      .map((j) => j.seq)
      .sort(),
    data: [...m.jobs.keys(), ...kept].sort(),
    lists: m.lists.map((l) => [...l]),
    delayed: {},
    leased: {},
    tokens: {},
    dead: [],
    progress: {},
    ids: Object.fromEntries([...[...m.kept.cids].map(([c, seq]) => [c, `~:${seq}`]), ...m.cids]),
    completed: kept,
    info: kept,
    groups: expectedGroups(m),
  };
  for (const k of m.kept.jobs.values())
    if (k.progress !== undefined) e.progress[k.seq] = JSON.stringify(k.progress);
  for (const j of m.jobs.values()) {
    if (j.state === 'delayed') e.delayed[j.seq] = j.due!;
    if (j.state === 'leased') {
      e.leased[j.seq] = j.deadline!;
      e.tokens[j.seq] = `${j.lease!.token}:${j.lease!.workerId}`;
    }
    if (j.state === 'dead') e.dead.push(j.seq);
    if (j.progress !== undefined) e.progress[j.seq] = JSON.stringify(j.progress);
  }
  e.dead.sort();
  return e;
}

function expectedGroups(m: Model): GroupKeys {
  const g = m.groups;
  const pending: Record<string, Record<string, number>> = {};
  for (const [name, ws] of g.pending)
    pending[name] = Object.fromEntries(ws.map((w) => [w.seq, w.prio * SPAN + w.place]));
  return {
    pending,
    ready: Object.fromEntries(g.ready),
    running: Object.fromEntries(g.running),
    listed: [...g.listed].sort(),
    paused: [...g.paused].sort(),
    counts: Object.fromEntries([...g.counts].map(([p, n]) => [String(p), n])),
  };
}

/** JSON with object keys sorted (undefined values dropped, as toEqual ignores them). */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

/** expect(got).toEqual(want), with a cheap first look (a deep toEqual of big keys is slow). */
function sameAs(got: unknown, want: unknown): void {
  if (canonical(got) !== canonical(want)) expect(got).toEqual(want);
}

/**
 * The flow notice keys hold what the model says: the same entries; their times, read back into
 * the model where it did not know them (the queue's Redis time), else equal.
 */
function checkFlowKeys(m: Model, r: Real, k: FlowKeys): void {
  const f = m.flows;
  const queue = r.q.name;
  const adopt = <V>(
    what: string,
    got: Record<string, number>,
    want: Map<string, V>,
    field: keyof V,
  ) => {
    sameAs({ what, entries: Object.keys(got).sort() }, { what, entries: [...want.keys()].sort() });
    for (const [seq, v] of want) {
      const t = got[seq]!;
      if (v[field] === undefined) (v as Record<keyof V, unknown>)[field] = t;
      else expect({ what, seq, t }).toEqual({ what, seq, t: v[field] });
    }
  };
  adopt('notices not delivered', k.undelivered, f.undelivered, 'at');
  adopt('notices to deliver again', k.rechecks, f.rechecks, 'due');
  const cancels: Record<string, number> = {};
  for (const [member, t] of Object.entries(k.cancels)) {
    expect(member.startsWith(`${queue}:`)).toBe(true);
    cancels[member.slice(queue.length + 1)] = t;
  }
  adopt('children to cancel', cancels, f.cancels, 'at');
  const outbox = [...f.undelivered.keys(), ...f.rechecks.keys()].sort();
  sameAs({ outbox: k.outbox }, { outbox });
}

/** Every check, after every step. */
export async function checkAll(m: Model, r: Real): Promise<void> {
  const { flows, ...s } = await snapshot(r);
  expect(invariantViolations(s)).toEqual([]);
  sameAs({ ...s, meta: undefined }, { ...expectedKeys(m), meta: undefined });
  checkFlowKeys(m, r, flows);

  // (c) complete returned true at most once per incarnation.
  for (const [seq, n] of m.completedTrue)
    if (n !== 1) throw new Error(`complete returned true ${n} times for job ${seq}`);

  // (a) getJob of every id ever added, but for jobs far back in a long pending list (their
  // place is checked above, entry for entry): a bulk of 2 000 jobs would cost seconds a step.
  const front = new Set([
    ...m.lists.flatMap((l) => l.slice(0, 30)),
    ...[...m.groups.pending.values()].flatMap((ws) => ws.slice(0, 30).map((w) => w.seq)),
  ]);
  const ids = [...m.publicIds].filter((id) => {
    const job = m.byPublicId(id);
    return !job || job.state !== 'pending' || front.has(job.seq);
  });
  const infos = await Promise.all(ids.map((id) => r.q.getJob(id)));
  const now = await redisTime(r);
  ids.forEach((id, i) => {
    const job = m.byPublicId(id);
    const info = infos[i];
    const kept = job ? undefined : m.kept.byPublicId(id);
    if (!job && !kept) {
      expect({ id, info }).toEqual({ id, info: null });
      return;
    }
    const got: Record<string, unknown> = { ...info };
    delete got.leaseExpiries; // not modelled: its rules are changing
    delete got.lastError;
    delete got.deadReason;
    delete got.name;
    if (kept) {
      sameAs(got, {
        id,
        state: 'completed',
        data: kept.data,
        priority: kept.priority,
        attemptsMade: kept.attemptsMade,
        progress: kept.progress,
        at: kept.finishedAt,
        finishedAt: kept.finishedAt,
        addedAt: kept.addedAt ?? got.addedAt,
        startedAt: kept.startedAt,
        processedBy: kept.processedBy,
        ...(kept.group === undefined ? {} : { group: kept.group }),
        ...(kept.parent === undefined ? {} : { parent: { queue: r.q.name, id: kept.parent } }),
      });
      checkTimes(id, [kept.addedAt, kept.startedAt, kept.finishedAt], now);
      return;
    }
    // Its added time is read back once (within the add call), then never changes.
    if (job!.addedAt === undefined) {
      const [t0, t1] = job!.addedWithin!;
      const added = info?.addedAt ?? 0;
      expect({ id, added, within: added >= t0 && added <= t1 }).toEqual({
        id,
        added,
        within: true,
      });
      job!.addedAt = added;
    }
    const want: Record<string, unknown> = {
      id,
      state: job!.state,
      data: job!.data,
      priority: job!.priority,
      attemptsMade: job!.attempts,
      progress: job!.progress,
      addedAt: job!.addedAt,
      startedAt: job!.startedAt,
      processedBy: job!.state === 'leased' ? job!.lease!.workerId : job!.lastWorker,
    };
    if (job!.group !== undefined) want.group = job!.group;
    if (job!.state === 'leased') want.at = job!.deadline;
    if (job!.state === 'delayed') want.at = job!.due;
    const child = m.flows.parentOf.get(job!.seq);
    if (child) want.parent = { queue: r.q.name, id: child.parent };
    const counts = m.flows.parents.get(job!.seq)?.counts;
    if (counts) want.children = counts;
    if (['pending', 'dead', 'waiting-children'].includes(job!.state)) delete got.at;
    // A dead job's finishedAt is its death time (not modelled): after its start, before now.
    if (job!.state === 'dead') {
      checkTimes(id, [job!.addedAt, job!.startedAt, got.finishedAt as number], now);
      delete got.finishedAt;
    } else checkTimes(id, [job!.addedAt, job!.startedAt], now);
    sameAs(got, want);
  });

  // The kept completed jobs, newest first (a page).
  const page = await r.q.getJobs('completed', { limit: 10 });
  expect(page.map((j) => j.id)).toEqual(
    m.kept
      .newestFirst()
      .slice(0, 10)
      .map((k) => k.id),
  );

  // (e) counts() agrees (pending counts include tombstones, as documented).
  const c = await r.q.counts();
  const byPrio = m.lists.map((l, p) => l.length + (m.groups.counts.get(p) ?? 0));
  const count = (state: string) => [...m.jobs.values()].filter((j) => j.state === state).length;
  expect({ ...c, workers: 0 }).toEqual({
    pendingByPriority: byPrio,
    pending: byPrio.reduce((a, b) => a + b, 0),
    delayed: count('delayed'),
    leased: count('leased'),
    dead: count('dead'),
    workers: 0,
    completed: m.kept.jobs.size,
    waitingChildren: count('waiting-children'),
  });
}

/** A job's times in order (added ≤ started ≤ finished; unknown ones skipped), none after now. */
function checkTimes(id: string, times: Array<number | undefined>, now: number): void {
  const known = times.filter((t): t is number => t !== undefined);
  const sorted = [...known].sort((a, b) => a - b);
  expect({ id, times: known, ok: known.join() === sorted.join() && sorted.at(-1)! <= now }).toEqual(
    {
      id,
      times: known,
      ok: true,
    },
  );
}

/** Redis server time in ms. */
export async function redisTime(r: Real): Promise<number> {
  const [s, us] = await r.redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}
