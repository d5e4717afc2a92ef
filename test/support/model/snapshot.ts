/**
 * What the checks of test/integration/model/model.test.ts read from Redis (check.ts): the queue
 * under test, Redis time, and the queue's keys in one consistent snapshot.
 */
import type { Redis } from 'ioredis';
import type { WorkQueue } from '../../../lib/index.js';
import { LEASE_PAD } from '../../../lib/keys.js';
import type { Payload } from './types.js';

export interface Real {
  q: WorkQueue<Payload>;
  /** An observer connection (reads keys, Redis TIME). */
  redis: Redis;
  /** A fresh connection that its user disconnects (a dying client gets one). */
  newClient(): Redis;
  /** Count a case that came up (printed with MODEL_STATS=1: what the runs exercised). */
  note(what: string): void;
}

/** Redis server time in ms. */
export async function redisTime(r: Real): Promise<number> {
  const [s, us] = await r.redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** When the queue's heartbeat record says a first look at a silence of every beat was (0: none). */
export async function lookNoted(r: Real): Promise<number> {
  return Number(await r.redis.hget(r.q.keys.heartbeatRecord, 'q')) || 0;
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
export interface FlowKeys {
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
