import { afterAll, describe, expect, it } from '@jest/globals';
import { keysMatching } from '../../support/keys.js';
import { keysLeft } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('results', () => {
  it('opt-in: getResult and getJob().state === completed, for generated and caller ids', async () => {
    const q = fx.queue<string, { sum: number }>({
      storeResults: { ttlMs: 60_000 },
      dedupeWindowMs: 0,
      keepCompleted: false, // results by id alone (with kept jobs: history/kept.test.ts)
    });
    await q.add('gen');
    await q.add('named', { id: 'invoice-7' });
    const [a, b] = await q.lease({ count: 2, leaseMs: 10_000 });
    expect(await q.complete(a!, { sum: 1 })).toBe(true);
    expect(await q.complete(b!, { sum: 2 })).toBe(true);
    expect(await q.getResult(a!.id)).toEqual({ sum: 1 });
    expect(await q.getResult('invoice-7')).toEqual({ sum: 2 });
    expect(await q.getJob(a!.id)).toMatchObject({ state: 'completed', result: { sum: 1 } });
    expect(await q.getJob('invoice-7')).toMatchObject({ state: 'completed', result: { sum: 2 } });
    // A second (refused) complete does not overwrite the stored result.
    expect(await q.complete(a!, { sum: 99 })).toBe(false);
    expect(await q.getResult(a!.id)).toEqual({ sum: 1 });
    // Only the results remain besides the counters and the (capped) event log.
    expect(await keysLeft(fx.client(), q.keys.base)).toEqual([
      'es',
      'id',
      'ik:*',
      'mt:completed',
      'res',
      'rx',
      'tok',
    ]);
  });

  it('off by default: getResult is undefined and no results key is written', async () => {
    const q = fx.queue<string, { sum: number }>({ keepCompleted: false });
    await q.add('x', { id: 'cid' });
    const [a] = await q.lease({ leaseMs: 10_000 });
    expect(await q.complete(a!, { sum: 1 })).toBe(true);
    expect(await q.getResult('cid')).toBeUndefined();
    // Within its dedupe window the caller id shows the job completed, without a result.
    expect(await q.getJob('cid')).toEqual({ id: 'cid', state: 'completed' });
    const keys = await keysMatching(fx.client(), `${q.keys.base}*`);
    expect(keys).not.toContain(q.keys.key('results'));
    expect(keys).not.toContain(q.keys.key('resultExpiries'));
  });

  it('an expired result is not answered, even before a clean() drops it', async () => {
    const q = fx.queue<string, string>({ storeResults: { ttlMs: 150 }, keepCompleted: false });
    await q.add('a');
    const [a] = await q.lease({ count: 1, leaseMs: 10_000 });
    await q.complete(a!, 'ra');
    expect(await q.getResult(a!.id)).toBe('ra');
    // No clean() runs here: the stored result is still in Redis, past its time.
    await waitFor(async () => (await q.getResult(a!.id)) === undefined, {
      what: 'the 150 ms result to be over',
    });
    expect(await q.getJob(a!.id)).toBeNull();
    expect(await fx.client().hexists(q.keys.key('results'), a!.id)).toBe(1);
  });

  it('expired results are dropped by clean', async () => {
    const q = fx.queue<string, string>({ storeResults: { ttlMs: 80 }, keepCompleted: false });
    await q.addBulk([{ data: 'a' }, { data: 'b' }]);
    const [a, b] = await q.lease({ count: 2, leaseMs: 10_000 });
    await q.complete(a!, 'ra');
    await q.complete(b!, 'rb');
    expect(await q.getResult(a!.id)).toBe('ra');
    expect((await q.clean()).resultsExpired).toBe(0);
    let dropped = 0;
    await waitFor(
      async () => {
        dropped += (await q.clean()).resultsExpired;
        return dropped === 2;
      },
      { what: 'the 80 ms results to expire and be dropped' },
    );
    expect(await q.getResult(a!.id)).toBeUndefined();
    expect(await q.getResult(b!.id)).toBeUndefined();
    expect(await keysLeft(fx.client(), q.keys.base)).toEqual([
      'es',
      'id',
      'ik:*',
      'mt:completed',
      'tok',
    ]);
  });
});
