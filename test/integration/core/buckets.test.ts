// Payloads live in buckets of DATA_SPAN ids (lib/scripts/lib/data.lua): batches that cross
// bucket boundaries, the bucket set kept exact, buckets staying compact, obliterate.
import { afterAll, describe, expect, it } from '@jest/globals';
import { DATA_SPAN } from '../../../lib/keys.js';
import { allPayloads } from '../../support/payloads.js';
import { keysButCounters, QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

describe('payload buckets', () => {
  it('batches across buckets read and drop the right payloads; the bucket set stays exact', async () => {
    // Completed jobs leave their buckets at once (keepCompleted: false).
    const q = fx.queue<{ n: number }>({ keepCompleted: false });
    const c = fx.client();
    const added = await q.addBulk(range(1, 1_000).map((n) => ({ data: { n } })));
    const ids = added.map((a) => a.id);
    expect(ids).toEqual(range(1, 1_000).map(String));
    const buckets = range(0, Math.floor(1_000 / DATA_SPAN)).map(String);
    expect((await c.smembers(q.keys.dataBuckets)).sort()).toEqual(buckets.sort());
    for (const b of buckets) {
      // A full bucket of small payloads stays compact.
      expect(await c.object('ENCODING', q.keys.dataBucketNamed(b))).toBe('listpack');
      expect(await c.hlen(q.keys.dataBucketNamed(b))).toBeLessThanOrEqual(DATA_SPAN);
    }

    // 300 jobs leased in one call span three buckets; each gets its own payload.
    const jobs = await q.lease({ count: 300, leaseMs: 30_000 });
    expect(jobs.map((j) => [j.id, j.data.n])).toEqual(range(1, 300).map((n) => [String(n), n]));
    await q.completeAndLease(jobs.map((lease) => ({ lease })));
    const left = await allPayloads(c, q.keys);
    expect(
      Object.keys(left)
        .map(Number)
        .sort((a, b) => a - b),
    ).toEqual(range(301, 1_000));
    // Buckets 0 (ids 1–127) and 1 (128–255) emptied: gone, and out of the set.
    const after = (await c.smembers(q.keys.dataBuckets)).sort();
    expect(after).toEqual(buckets.filter((b) => Number(b) >= 2).sort());
    expect(await c.exists(q.keys.dataBucketNamed('0'), q.keys.dataBucketNamed('1'))).toBe(0);

    // Lookups by id in the middle of a bucket.
    expect((await q.getJob('900'))?.data).toEqual({ n: 900 });
    expect(await q.cancel('901')).toBe(true);
    expect(await c.hexists(q.keys.dataBucket('901'), '901')).toBe(0);
    expect(await q.getJob('901')).toBeNull();

    // Obliterate walks the bucket set: nothing of the queue is left.
    await q.obliterate();
    expect(await keysButCounters(c, q)).toEqual([]);
  });
});
