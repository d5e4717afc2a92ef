/**
 * A crash-point queue's state as compared between the twin queues (crash-point-support.ts): every
 * key with its contents, its times in 10 s buckets.
 */
import type { WorkQueue } from '../../lib/index.js';
import { keysMatching } from '../support/keys.js';
import { adminClient } from './crash-point-redis.js';

/** A time (Redis ms) as a 10 s bucket of `now`, so that the twin queues compare equal. */
const bucket = (ms: number, now: number) => `@${Math.round((ms - now) / 10_000)}`;

/**
 * A string key of the history (lib/scripts/lib/history.lua) with its times in buckets: the time
 * slots of a payload bucket (`t:<b>`, u48 each, 0 = none), the per-minute counts (`mt:<kind>`:
 * their total; the minute two twins ran in may differ).
 */
async function historyString(part: string, key: string, now: number): Promise<unknown> {
  const admin = adminClient();
  const raw = (await admin.getBuffer(key)) ?? Buffer.alloc(0);
  if (part.startsWith('t:')) {
    const slots: string[] = [];
    for (let i = 0; i + 6 <= raw.length; i += 6) {
      const ms = raw.readUIntBE(i, 6);
      slots.push(ms === 0 ? '0' : bucket(ms, now));
    }
    return slots;
  }
  let total = 0;
  for (let i = 0; i + 8 <= raw.length; i += 8) total += raw.readUInt32BE(i + 4);
  return total;
}

/** Redis time (ms): the base of a snapshot's buckets, read just before the script it follows ran. */
export async function redisTime(): Promise<number> {
  const [s, us] = await adminClient().time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/**
 * Every key of the queue's prefix (the queue, and the other queues of its flows), relative to the
 * prefix, with contents; scores in 10 s buckets of `now` (redisTime before the script ran: a
 * twin whose script ran or whose snapshot was taken seconds later, under load, compares equal).
 */
export async function snapshot(
  q: WorkQueue<unknown>,
  now: number,
): Promise<Record<string, unknown>> {
  const admin = adminClient();
  const base = `${q.options.prefix}:`;
  const out: Record<string, unknown> = {};
  for (const key of await keysMatching(admin, `${base}*`)) {
    const part = key.slice(base.length);
    // A producer's record of its own add calls (idempotent re-sends) counts its calls, which
    // differ between the two producers compared: not part of the queue's state.
    if (part.includes('}:ik:')) continue;
    const type = await admin.type(key);
    const own = part.slice(part.indexOf('}:') + 2); // the key's part within its queue
    if (/^(t|mt):/.test(own)) out[part] = await historyString(own, key, now);
    else if (type === 'string') out[part] = await admin.get(key);
    else if (type === 'list') out[part] = await admin.lrange(key, 0, -1);
    else if (type === 'set') out[part] = (await admin.smembers(key)).sort();
    else if (part.endsWith('}:hb')) {
      // Heartbeat times: in 10 s buckets of now, like scores.
      out[part] = Object.entries(await admin.hgetall(key))
        .map(([f, v]) => `${f}@${Math.round((Number(v) - now) / 10_000)}`)
        .sort();
    } else if (type === 'hash') {
      // Caller ids kept after completion hold '~<until ms>[:<seq>]', worker info '<ms>:<JSON>':
      // times, in 10 s buckets too.
      out[part] = Object.entries(await admin.hgetall(key))
        .map(([f, v]) => {
          const kept = /^~(\d+)(:.*)?$/.exec(v);
          if (kept) return [f, `~${bucket(Number(kept[1]), now)}${kept[2] ?? ''}`];
          const info = own === 'wi' && /^(\d+):(.*)$/.exec(v);
          if (info) return [f, `${bucket(Number(info[1]), now)}:${info[2]}`];
          return [f, v];
        })
        .sort();
    } else if (type === 'zset') {
      const flat = await admin.zrange(key, '0', '-1', 'WITHSCORES');
      const pairs: string[] = [];
      // Scores that are not times (groups: places in line, turns; the list of groups; a flow
      // reservation's first seq; a waiting parent's seq) as stored.
      const untimed =
        own.startsWith('gp:') || own === 'gq' || own === 'ga' || own === 'fv' || own === 'wc';
      // A flow reservation's member ends with its time: in 10 s buckets too.
      const member = (m: string) =>
        part.endsWith('}:fv')
          ? m.replace(/\d+$/, (t) => `@${Math.round((Number(t) - now) / 10_000)}`)
          : m;
      for (let i = 0; i < flat.length; i += 2)
        pairs.push(
          `${member(flat[i]!)}@${untimed ? flat[i + 1] : Math.round((Number(flat[i + 1]) - now) / 10_000)}`,
        );
      out[part] = pairs.sort();
    } else out[part] = type;
  }
  return out;
}
