// Plain adds (no caller id, no schedule) take a leaner script, add_plain.lua, and single adds
// without options skip the option checks: the Redis state they leave is the one add.lua leaves.
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { WorkQueue, type AddOptions } from '../../../lib/index.js';
import { errorOf } from '../../support/core.js';
import { keysMatching, uniqueName } from '../../support/keys.js';
import { startRedis } from '../../support/redis-server.js';
import { QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/** Every key of a queue but the producer's call record, by name relative to the queue. */
async function state(client: Redis, q: WorkQueue<unknown>): Promise<Record<string, unknown>> {
  const base = `${q.options.prefix}:{${q.name}}:`;
  const out: Record<string, unknown> = {};
  for (const key of await keysMatching(client, `${base}*`)) {
    const rel = key.slice(base.length);
    if (rel.startsWith('ik:')) continue;
    const type = await client.type(key);
    if (rel.startsWith('t:')) {
      // Job times (u48 slots, lib/scripts/lib/history.lua): which slots are set, not the times,
      // and the string's length (add_plain.lua's SETRANGE ends where add.lua's BITFIELD does).
      const raw = (await client.getBuffer(key))!;
      const set: number[] = [];
      for (let i = 0; i + 6 <= raw.length; i += 6) if (raw.readUIntBE(i, 6) > 0) set.push(i / 6);
      out[rel] = set;
      out[`${rel} bytes`] = raw.length;
    } else if (type === 'string') out[rel] = await client.get(key);
    else if (type === 'list') out[rel] = await client.lrange(key, 0, -1);
    else if (type === 'hash') out[rel] = await client.hgetall(key);
    else if (type === 'zset') out[rel] = await client.zrange(key, '0', '-1', 'WITHSCORES');
    else if (type === 'stream') {
      // One entry per add call: compare the jobs each kind of event names, not the entries.
      const ids: string[] = [];
      // (Plain ids travel as one space-separated 'n' field, caller ids as 'i' fields.)
      for (const [, fields] of await client.xrange(key, '-', '+')) {
        for (let i = 2; i < fields.length; i += 2) {
          const values = fields[i] === 'n' ? fields[i + 1]!.split(' ') : [fields[i + 1]!];
          for (const v of values) ids.push(`${fields[1]}:${fields[i]}:${v}`);
        }
      }
      out[rel] = ids;
    } else out[rel] = `(${type})`;
  }
  return out;
}

const plainJobs: { data: unknown; opts?: AddOptions }[] = [
  { data: { x: 1 }, opts: { priority: 2, name: 'n' } },
  { data: 'm', opts: { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 5 } } },
  { data: [9], opts: { priority: 9 } },
];

describe('add: plain jobs', () => {
  it('leave the same Redis state through add_plain.lua (and the no-options fast path) as through add.lua', async () => {
    const client = fx.client();
    const general = fx.queue<unknown>();
    const plain = fx.queue<unknown>({ prefix: general.options.prefix });
    // add.lua: a batch with one caller id goes whole through the general script.
    const viaGeneral = await general.addBulk([
      { data: 'a' },
      ...plainJobs,
      { data: 'c', opts: { id: 'c' } },
    ]);
    // add_plain.lua: a single add without options, a batch of plain jobs; then add.lua.
    const viaPlain = [
      await plain.add('a'),
      ...(await plain.addBulk(plainJobs)),
      await plain.add('c', { id: 'c' }),
    ];
    expect(viaPlain).toEqual(viaGeneral);
    expect(viaPlain.map((r) => r.id)).toEqual(['1', '2', '3', '4', 'c']);
    const s = await state(client, plain);
    expect(s).toEqual(await state(client, general));
    expect(Object.keys(s).sort()).toEqual([
      'd:0',
      'db',
      'es',
      'id',
      'ids',
      'm',
      'p2',
      'p5',
      'p9',
      't:0',
      't:0 bytes',
      'wake',
    ]);
    // Added times of jobs 1..5 (slots 2, 4, …), no start yet.
    expect(s['t:0']).toEqual([2, 4, 6, 8, 10]);
  });

  it('a batch across payload buckets, in two priorities, leaves the state add.lua leaves', async () => {
    const client = fx.client();
    const general = fx.queue<unknown>();
    const plain = fx.queue<unknown>({ prefix: general.options.prefix });
    // 100 jobs first, so that the batch starts inside bucket 0 and ends inside bucket 3.
    const before = Array.from({ length: 100 }, (_, i) => ({ data: i }));
    const batch = Array.from({ length: 300 }, (_, i) => ({
      data: { i },
      opts: i % 3 === 0 ? { priority: 3 } : { name: 'n' },
    }));
    await general.addBulk(before);
    await general.addBulk([...batch, { data: 'c', opts: { id: 'c' } }]);
    await plain.addBulk(before);
    await plain.addBulk(batch);
    await plain.add('c', { id: 'c' });
    const s = await state(client, plain);
    expect(s).toEqual(await state(client, general));
    expect(Object.keys(s).filter((k) => k.startsWith('d:'))).toHaveLength(4);
    // Every job has its added time (slot 2·(seq mod 128)), in each of the four time buckets.
    const slots = (from: number, to: number) =>
      Array.from({ length: to - from + 1 }, (_, i) => 2 * ((from + i) % 128));
    expect(s['t:0']).toEqual(slots(1, 127));
    expect(s['t:3']).toEqual(slots(384, 401));
    expect((s.p3 as string[]).length + (s.p5 as string[]).length).toBe(401);
  });

  it('hand off to a parked worker the way add.lua does', async () => {
    const client = fx.client();
    const general = fx.queue<unknown>();
    const plain = fx.queue<unknown>({ prefix: general.options.prefix });
    const [t] = await client.time();
    for (const q of [general, plain]) {
      // A worker parked for a minute (as the lease script marks it), nothing in the wake list.
      await client.zadd(q.keys.key('parked'), (Number(t) + 60) * 1000, '1');
    }
    await general.addBulk([{ data: 'h' }, { data: 'c', opts: { id: 'c' } }]);
    await plain.addBulk([{ data: 'h' }]);
    await plain.add('c', { id: 'c' });
    // Lease deadlines (ms timestamps, in the leased set and the hand-off entry) differ.
    const timeless = (v: Record<string, unknown>) =>
      JSON.parse(JSON.stringify(v).replace(/\d{13}/g, 'T')) as unknown;
    const s = await state(client, plain);
    expect(timeless(s)).toEqual(timeless(await state(client, general)));
    expect(s.wake).toEqual([expect.stringMatching(/^h1:1:\d+:5:0:\d+\n"h"$/)]);
    expect(s.lt).toEqual({ '1': '1:h' });
    expect(s.p5).toEqual(['2']);
  });

  it('jobs without meta (their payloads alone), across payload buckets, with a hand-off, leave the state add.lua leaves', async () => {
    const client = fx.client();
    const general = fx.queue<unknown>();
    const plain = fx.queue<unknown>({ prefix: general.options.prefix });
    // (At priority 0: an add hands off no job past pending jobs of its own priority.)
    const before = Array.from({ length: 100 }, (_, i) => ({ data: i, opts: { priority: 0 } }));
    const batch = Array.from({ length: 200 }, (_, i) => ({ data: { i } }));
    const [t] = await client.time();
    for (const q of [general, plain]) {
      await q.addBulk(before);
      // A worker parked for a minute, no wake-up waiting: the batch's first job is handed off.
      await client.del(q.keys.wake);
      await client.zadd(q.keys.key('parked'), (Number(t) + 60) * 1000, '1');
    }
    await general.addBulk([...batch, { data: 'c', opts: { id: 'c' } }]);
    await plain.addBulk(batch);
    await plain.add('c', { id: 'c' });
    // One job alone (no tables in add_plain.lua), then two.
    for (const q of [general, plain]) await q.add('one');
    await general.addBulk([{ data: 'x' }, { data: 'y' }, { data: 'c2', opts: { id: 'c2' } }]);
    await plain.addBulk([{ data: 'x' }, { data: 'y' }]);
    await plain.add('c2', { id: 'c2' });
    const timeless = (v: Record<string, unknown>) =>
      JSON.parse(JSON.stringify(v).replace(/\d{13}/g, 'T')) as unknown;
    const s = await state(client, plain);
    expect(timeless(s)).toEqual(timeless(await state(client, general)));
    expect(s.lt).toEqual({ '101': '1:h' });
    expect(s.wake).toEqual([expect.stringMatching(/^h101:1:\d+:5:0:\d+\n\{"i":0\}$/)]);
    // Job 101's added and started slots are set (its lease started at its add), then every
    // added slot up to job 305 (in time buckets 0, 1 and 2).
    expect(s['t:0']).toEqual([
      ...Array.from({ length: 100 }, (_, i) => 2 * (i + 1)),
      202,
      203,
      ...Array.from({ length: 26 }, (_, i) => 2 * (i + 102)),
    ]);
    expect(s['t:2']).toEqual(Array.from({ length: 50 }, (_, i) => 2 * i));
    expect(s['t:2 bytes']).toBe(12 * 49 + 6);
    expect(s.p0).toHaveLength(100);
    expect(s.p5).toHaveLength(204);
  });

  it('a bad payload without options is refused with the error of the full checks', async () => {
    const q = fx.queue<unknown>();
    const noOpts = (await errorOf(q.add(undefined))) as Error;
    const withOpts = (await errorOf(q.add(undefined, { name: 'n' }))) as Error;
    expect(noOpts).toMatchObject({ code: 'ENCODE_FAILED' });
    expect(noOpts.message).toBe(withOpts.message);
    const big = fx.queue<string>({ maxPayloadBytes: 10 });
    // JSON: the quotes count (2 bytes), é is 2 bytes in UTF-8.
    expect(await errorOf(big.add('é'.repeat(5)))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(await errorOf(big.add('x'.repeat(9)))).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(await big.add('é'.repeat(4))).toMatchObject({ added: true });
    expect(await big.add('x'.repeat(8))).toMatchObject({ added: true });
    expect(await q.counts()).toMatchObject({ pending: 0 });
  });

  // add_plain.lua writes the 'added' event first: its entry id's ms is the jobs' added time
  // (no TIME), and an event log of the wrong type refuses the add before any job is written.
  it("take their added time from their 'added' event, written first", async () => {
    const q = fx.queue<number>();
    const c = fx.client();
    await q.add(1);
    await q.addBulk([{ data: 2 }, { data: 3 }]);
    const entries = await c.xrange(q.keys.eventLog, '-', '+');
    expect(entries.map(([, f]) => f)).toEqual([
      ['e', 'added', 'n', '1'],
      ['e', 'added', 'n', '2 3'],
    ]);
    const ms = entries.map(([id]) => Number(id.split('-')[0]));
    const added = await Promise.all(
      ['1', '2', '3'].map(async (id) => (await q.getJob(id))!.addedAt),
    );
    expect(added).toEqual([ms[0], ms[1], ms[1]]);

    await c.del(q.keys.eventLog);
    await c.set(q.keys.eventLog, 'not a stream');
    for (const add of [() => q.add(4), () => q.addBulk([{ data: 5 }, { data: 6 }])]) {
      const e = (await errorOf(add())) as Error;
      expect(e).toMatchObject({ code: 'SCRIPT_ERROR' });
      expect(e.message).toMatch(/WRONGTYPE/);
    }
    expect(await q.counts()).toMatchObject({ pending: 3 });
    expect(await c.smembers(q.keys.dataBuckets)).toEqual(['0']);
    expect(await c.hkeys(q.keys.dataBucketNamed('0'))).toEqual(['1', '2', '3']);
    await c.del(q.keys.eventLog);
    expect(await q.add(7)).toMatchObject({ added: true });
    expect((await q.lease({ count: 10 })).map((j) => j.data)).toEqual([1, 2, 3, 7]);
  });

  // Scripts are sent as commands made by lib/scripts/define.ts, unless the client's options
  // shape commands: then by ioredis' own methods (evalsha, eval after NOSCRIPT). A private
  // Redis: SCRIPT FLUSH would make other files' scripts go again with their text.
  it.each([
    ['auto-pipelining', { enableAutoPipelining: true }],
    ['friendly error stacks', { showFriendlyErrorStack: true }],
    ['no such option', {}],
  ])('run alike on a client with %s, after a SCRIPT FLUSH too', async (_, extra) => {
    const redis = await startRedis();
    const client = new Redis(redis.url, extra);
    try {
      const q = new WorkQueue<unknown>(client, uniqueName(), { logger: false });
      expect(await q.add('a')).toEqual({ id: '1', added: true });
      await client.script('FLUSH');
      const more = await q.addBulk([{ data: 'b' }, { data: 'c', opts: { priority: 1 } }]);
      expect(more.map((r) => r.id)).toEqual(['2', '3']);
      expect((await q.lease({ count: 3 })).map((j) => j.data)).toEqual(['c', 'a', 'b']);
    } finally {
      await client.quit();
      await redis.dispose();
    }
  });
});
