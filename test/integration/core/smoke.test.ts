import { afterAll, describe, expect, it } from '@jest/globals';
import { QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('core smoke', () => {
  it('adds, leases, completes', async () => {
    const q = fx.queue<{ n: number }>();
    const a = await q.add({ n: 1 });
    expect(a).toEqual({ id: '1', added: true });
    const [job] = await q.lease({ count: 5, leaseMs: 1000 });
    expect(job!.data).toEqual({ n: 1 });
    expect(await q.complete(job!)).toBe(true);
    expect(await q.complete(job!)).toBe(false);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0 });
  });
});
