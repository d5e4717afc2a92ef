/**
 * Payloads (and ids, names, error messages, progress values) are data, never code: strings that
 * look like Lua, RESP or JavaScript, and JSON with `__proto__`/`constructor` keys, are stored and
 * returned verbatim, and nothing else in Redis or in the process changes.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../lib/index.js';
import { keysLeft } from '../support/core.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

const LUA = "redis.call('FLUSHALL')";
const NASTY_STRINGS = [
  LUA,
  "return redis.call('DEL', KEYS[13])",
  "]]) redis.call('FLUSHALL') --[[",
  "'); redis.call('FLUSHALL'); --",
  '*1\r\n$8\r\nFLUSHALL\r\n',
  '\u0000\u0001 nul and control bytes \u001b[31m',
  '${process.exit(1)}',
  '`${globalThis.process.exit(1)}`',
  'wq:{q}:d',
  '{"not":"parsed"}',
];

let server: RedisHandle;
let admin: Redis;
let client: Redis;
beforeAll(async () => {
  server = await startRedis();
  admin = new Redis(server.url);
  client = new Redis(server.url);
  await admin.set('sentinel', 'still here');
});
afterAll(async () => {
  client.disconnect();
  admin.disconnect();
  await server.dispose();
});

async function othersUntouched(): Promise<void> {
  expect(await admin.get('sentinel')).toBe('still here');
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(({} as Record<string, unknown>).polluted2).toBeUndefined();
  expect(Object.prototype).not.toHaveProperty('polluted');
}

describe('payloads are stored and returned verbatim, never evaluated', () => {
  it('json codec: Lua/RESP/JS-looking strings and __proto__ keys round-trip exactly', async () => {
    // Completed jobs not kept: nothing of them is left to compare (kept ones: docs/history.md).
    const q = new WorkQueue<unknown>(client, 'inject', { logger: false, keepCompleted: false });
    const protoJson =
      '{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted2":"yes"}}}';
    const payloads: unknown[] = [
      ...NASTY_STRINGS,
      JSON.parse(protoJson),
      { script: LUA, nested: [LUA, { deeper: NASTY_STRINGS }] },
    ];
    const added = await q.addBulk(payloads.map((data) => ({ data })));
    for (const [i, { id }] of added.entries()) {
      expect(await admin.hget(q.keys.dataBucket(id), id)).toBe(JSON.stringify(payloads[i]));
      const info = await q.getJob(id);
      expect(JSON.stringify(info!.data)).toBe(JSON.stringify(payloads[i]));
    }
    const seen: string[] = [];
    const worker = new Worker(q, (job) => void seen.push(JSON.stringify(job.data)), {
      concurrency: 4,
    });
    await waitFor(() => seen.length === payloads.length, { what: 'every payload handled' });
    await worker.close();
    expect(seen.sort()).toEqual(payloads.map((p) => JSON.stringify(p)).sort());
    // The __proto__ key came back as data (an own property), not as a prototype.
    const proto = JSON.parse(seen.find((s) => s.includes('__proto__'))!) as object;
    expect(Object.keys(proto)).toEqual(['__proto__', 'constructor']);
    await othersUntouched();
    expect(await keysLeft(admin, q.keys.base)).toEqual([
      'es',
      'hb',
      'id',
      'ik:*',
      'mt:completed',
      'tok',
      'wseq',
    ]);
  });

  it("codecs 'string' and 'buffer': the exact bytes, RESP and Lua lookalikes included", async () => {
    const s = new WorkQueue<string>(client, 'inject-s', { codec: 'string', logger: false });
    const b = new WorkQueue<Buffer>(client, 'inject-b', { codec: 'buffer', logger: false });
    for (const text of NASTY_STRINGS) {
      const { id } = await s.add(text);
      expect(await admin.hget(s.keys.dataBucket(id), id)).toBe(text);
      expect((await s.getJob(id))!.data).toBe(text);
      const bytes = Buffer.concat([Buffer.from(text), Buffer.from([0xff, 0x00, 0xfe])]);
      const r = await b.add(bytes);
      expect((await admin.hgetBuffer(b.keys.dataBucket(r.id), r.id))!.equals(bytes)).toBe(true);
    }
    const leased = await s.lease({ count: 100 });
    expect(leased.map((j) => j.data)).toEqual(NASTY_STRINGS);
    const bl = await b.lease({ count: 100 });
    expect(bl.map((j) => j.data.subarray(0, -3).toString())).toEqual(NASTY_STRINGS);
    await othersUntouched();
  });

  it('caller ids, names, error messages and progress values are data too', async () => {
    const q = new WorkQueue<unknown>(client, 'inject-meta', { logger: false, maxAttempts: 1 });
    const id = "x'); redis.call('FLUSHALL') --";
    const name = `\r\n*1\r\n$8\r\nFLUSHALL\r\n ${LUA}`;
    expect(await q.add({ n: 1 }, { id, name })).toEqual({ id, added: true });
    expect(await q.add({ n: 2 }, { id })).toEqual({ id, added: false });
    const [job] = await q.lease();
    expect(job).toMatchObject({ id, name, data: { n: 1 } });
    expect(await q.progress(job!, { note: LUA })).toBe(true);
    expect((await q.getJob(id))!.progress).toEqual({ note: LUA });
    expect(await q.fail(job!, new Error(`${LUA} ${NASTY_STRINGS[4]}`))).toBe('dead');
    const [dead] = await q.listDead();
    expect(dead).toMatchObject({ id, name, reason: `${LUA} ${NASTY_STRINGS[4]}` });
    expect(await q.retryDead(id)).toBe(true);
    expect(await q.cancel(id)).toBe(true);
    await othersUntouched();
  });
});
