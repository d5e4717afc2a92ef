import { afterAll, describe, expect, it } from '@jest/globals';
import { WorkQueueError } from '../../../lib/index.js';
import { errorOf } from '../../support/core.js';
import { keysMatching } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { putPayload } from '../../support/payloads.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

function expectCode(e: unknown, code: string): void {
  expect(e).toBeInstanceOf(WorkQueueError);
  expect((e as WorkQueueError).code).toBe(code);
}

describe('payloads', () => {
  it('JSON by default, stored as plain JSON (no envelope)', async () => {
    const q = fx.queue<unknown>();
    const c = fx.client();
    const values: unknown[] = [{ a: 1, b: [true, null, 'ü €'] }, 'text', 42, null, [1, [2]]];
    const res = await q.addBulk(values.map((data) => ({ data, opts: { name: 'n', priority: 2 } })));
    for (let i = 0; i < values.length; i++) {
      expect(await c.hget(q.keys.dataBucket(res[i]!.id), res[i]!.id)).toBe(
        JSON.stringify(values[i]),
      );
    }
    const jobs = await q.lease({ count: 10, leaseMs: 10_000 });
    expect(jobs.map((j) => j.data)).toEqual(values);
  });

  it("codec 'string' passes strings through as they are", async () => {
    const q = fx.queue<string>({ codec: 'string' });
    const c = fx.client();
    const s = '{"not":"parsed"} ü\u0000tail';
    const { id } = await q.add(s);
    expect(await c.hget(q.keys.dataBucket(id), id)).toBe(s);
    const [job] = await q.lease({ leaseMs: 10_000 });
    expect(job!.data).toBe(s);
    expect((await q.getJob(id))!.data).toBe(s);
    // Not a string: refused.
    expectCode(await errorOf(q.add(5 as unknown as string)), 'ENCODE_FAILED');
  });

  it("codec 'buffer': non-UTF-8 bytes round-trip exactly", async () => {
    const q = fx.queue<Buffer>({ codec: 'buffer' });
    const c = fx.client();
    const bytes = Buffer.from([
      0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28, 0xa0, 0xa1, 0xed, 0xa0, 0x80, 0x0a,
    ]);
    const { id } = await q.add(bytes);
    expect(await c.hgetBuffer(q.keys.dataBucket(id), id)).toEqual(bytes);
    const info = await q.getJob(id);
    expect(Buffer.isBuffer(info!.data)).toBe(true);
    expect(info!.data!.equals(bytes)).toBe(true);
    const [job] = await q.lease({ leaseMs: 10_000 });
    expect(Buffer.isBuffer(job!.data)).toBe(true);
    expect(job!.data.equals(bytes)).toBe(true);
    expect(job!.data.toString('hex')).toBe(bytes.toString('hex'));
    expectCode(await errorOf(q.add('str' as unknown as Buffer)), 'ENCODE_FAILED');
  });

  it('a value that cannot be encoded is refused at add with ENCODE_FAILED and nothing written', async () => {
    const q = fx.queue<unknown>();
    const c = fx.client();
    const cycle: Record<string, unknown> = { a: 1 };
    cycle.self = cycle;
    const bad: Array<[string, unknown]> = [
      ['BigInt', { n: 10n }],
      ['a cycle', cycle],
      ['undefined', undefined],
      ['a function', () => 1],
      ['a symbol', Symbol('s')],
    ];
    const codes: Record<string, unknown> = {};
    for (const [what, value] of bad) {
      const e = await errorOf(q.add(value));
      codes[what] = e instanceof WorkQueueError ? e.code : e;
    }
    expect(codes).toEqual(Object.fromEntries(bad.map(([what]) => [what, 'ENCODE_FAILED'])));
    expect(await keysMatching(c, `${q.options.prefix}:*`)).toEqual([]);
  });

  it('a payload over maxPayloadBytes is refused with PAYLOAD_TOO_LARGE', async () => {
    const q = fx.queue<string>({ maxPayloadBytes: 100 });
    const c = fx.client();
    // 98 characters + quotes = exactly 100 bytes: fine.
    expect((await q.add('x'.repeat(98))).added).toBe(true);
    // Multi-byte characters count in bytes: 50 × 'é' = 100 bytes + quotes.
    expectCode(await errorOf(q.add('é'.repeat(50))), 'PAYLOAD_TOO_LARGE');
    expectCode(await errorOf(q.add('x'.repeat(99))), 'PAYLOAD_TOO_LARGE');
    expect((await q.counts()).pending).toBe(1);
    const b = fx.queue<Buffer>({ codec: 'buffer', maxPayloadBytes: 8 });
    expectCode(await errorOf(b.add(Buffer.alloc(9))), 'PAYLOAD_TOO_LARGE');
    expect(await keysMatching(c, `${b.options.prefix}:*`)).toEqual([]);
  });

  it('addBulk: one bad job refuses the whole batch, nothing written', async () => {
    const q = fx.queue<unknown>({ maxPayloadBytes: 1_000 });
    const c = fx.client();
    const good = Array.from({ length: 5_000 }, (_, i) => ({ data: { i } }));
    // A bad job in the last chunk: earlier chunks must not be written either.
    const withBigInt = [...good, { data: { n: 1n } }];
    expectCode(await errorOf(q.addBulk(withBigInt)), 'ENCODE_FAILED');
    const withHuge = [...good.slice(0, 10), { data: 'x'.repeat(2_000) }, ...good.slice(10)];
    expectCode(await errorOf(q.addBulk(withHuge)), 'PAYLOAD_TOO_LARGE');
    const withBadOpts = [...good, { data: 1, opts: { priority: 12 } }];
    const e = await errorOf(q.addBulk(withBadOpts));
    expectCode(e, 'INVALID_ARGUMENT');
    expect((e as WorkQueueError).problems.join('\n')).toMatch(/job 5000: priority/);
    expect(await keysMatching(c, `${q.options.prefix}:*`)).toEqual([]);
  });

  it("a payload that cannot be decoded at lease is dead-lettered 'undecodable', never returned", async () => {
    const q = fx.queue<{ ok: boolean }>();
    const c = fx.client();
    await q.addBulk([{ data: { ok: true } }, { data: { ok: true } }, { data: { ok: true } }]);
    // (Not JSON, and JSON.parse's message would quote its first bytes.)
    await putPayload(c, q.keys, '2', 'SECRET-TOKEN');
    const jobs = await q.lease({ count: 10, leaseMs: 10_000 });
    expect(jobs.map((j) => j.id)).toEqual(['1', '3']);
    const dead = await q.listDead();
    expect(dead).toHaveLength(1);
    expect(dead[0]!.id).toBe('2');
    expect(dead[0]!.reason).toMatch(/^undecodable/);
    // Its size, never its bytes (listings and dashboards show it).
    expect(dead[0]!.decodeError).toBe('payload is not valid JSON (12 bytes)');
    const info = await q.getJob('2');
    expect(info!.state).toBe('dead');
    expect(info!.decodeError).toBe('payload is not valid JSON (12 bytes)');
    expect(info!.deadReason).toMatch(/^undecodable/);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 2, dead: 1 });
    expect(await q.lease({ count: 10, leaseMs: 10_000 })).toEqual([]);
  });
});
