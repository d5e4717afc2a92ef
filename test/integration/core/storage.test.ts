import { afterAll, describe, expect, it } from '@jest/globals';
import { NonRetryableError } from '../../../lib/index.js';
import { keysMatching } from '../../support/keys.js';
import { keysLeft } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('bounded storage', () => {
  it('the dead-letter set is capped: the oldest is trimmed with all its keys', async () => {
    const q = fx.queue<string>({ maxDead: 3 });
    const c = fx.client();
    await q.addBulk([
      { data: 'd1', opts: { id: 'first', name: 'n' } },
      { data: 'd2' },
      { data: 'd3' },
      { data: 'd4' },
    ]);
    const jobs = await q.lease({ count: 4, leaseMs: 10_000 });
    expect(await q.progress(jobs[0]!, { step: 1 })).toBe(true);
    const firstSeq = jobs[0]!.seq;
    for (const j of jobs.slice(0, 3)) {
      expect(await q.fail(j, new NonRetryableError(`bad ${j.data}`))).toBe('dead');
    }
    expect((await q.listDead()).map((d) => d.id)).toEqual(['first', '2', '3']);
    expect(await c.hexists(q.keys.dataBucket(firstSeq), firstSeq)).toBe(1);
    // The 4th dead job trims the oldest.
    expect(await q.fail(jobs[3]!, new NonRetryableError('bad d4'))).toBe('dead');
    const dead = await q.listDead();
    expect(dead.map((d) => [d.id, d.data, d.reason])).toEqual([
      ['2', 'd2', 'bad d2'],
      ['3', 'd3', 'bad d3'],
      ['4', 'd4', 'bad d4'],
    ]);
    expect(await q.counts()).toMatchObject({ dead: 3 });
    expect(await q.getJob('first')).toBeNull();
    expect(await c.hexists(q.keys.dataBucket(firstSeq), firstSeq)).toBe(0);
    expect(await c.hexists(q.keys.key('meta'), firstSeq)).toBe(0);
    expect(await c.hexists(q.keys.key('progress'), firstSeq)).toBe(0);
    expect(await c.hexists(q.keys.key('callerIds'), 'first')).toBe(0);
    expect(await c.zscore(q.keys.dead, firstSeq)).toBeNull();
    // The caller id is free again.
    expect(await q.add('again', { id: 'first' })).toEqual({ id: 'first', added: true });
  });

  it('after a mixed workload finishes, only the counters remain', async () => {
    const q = fx.queue<{ k: string }>({
      keepCompleted: false, // kept completed jobs: test/integration/history/kept.test.ts
      maxAttempts: 2,
      backoff: { type: 'fixed', delayMs: 30 },
      maxLeaseExpiries: 5,
      dedupeWindowMs: 0, // completed caller ids kept for a window: see core-add
      heartbeatTimeoutMs: 60_000, // the test's worker never beats
    });
    const c = fx.client();
    await q.addBulk([
      { data: { k: 'plain' } },
      { data: { k: 'cid' }, opts: { id: 'order-1', name: 'ship', priority: 1 } },
      { data: { k: 'named' }, opts: { name: 'mail', priority: 9 } },
      { data: { k: 'delayed' }, opts: { delayMs: 400, id: 'later' } },
      { data: { k: 'retry' }, opts: { id: 'flaky', priority: 2 } },
      { data: { k: 'dies' }, opts: { id: 'doomed', priority: 0 } },
      { data: { k: 'cancel-pending' }, opts: { id: 'nope', priority: 7 } },
      { data: { k: 'cancel-leased' }, opts: { priority: 8 } },
      { data: { k: 'expires' }, opts: { priority: 3 } },
    ]);
    await q.add({ k: 'dup' }, { id: 'order-1' }); // deduped
    const worker = await q.registerWorker();
    expect(await q.cancel('nope')).toBe(true);

    // One round of everything that can happen to a job.
    const batch = await q.lease({ count: 10, leaseMs: 10_000, workerId: worker });
    const byKey = new Map(batch.map((j) => [j.data.k, j]));
    expect(byKey.has('cancel-pending')).toBe(false);
    expect(byKey.has('delayed')).toBe(false);
    for (const j of batch) expect(await q.progress(j, 0.5)).toBe(true);
    expect(await q.fail(byKey.get('dies')!, new NonRetryableError('fatal'))).toBe('dead');
    expect(await q.fail(byKey.get('retry')!, new Error('try again'))).toBe('retried');
    expect(await q.cancel(byKey.get('cancel-leased')!.id)).toBe(true);
    expect(await q.release(byKey.get('named')!)).toEqual([true]);
    expect(await q.extend(byKey.get('expires')!, 30)).toEqual([true]);
    for (const k of ['plain', 'cid']) expect(await q.complete(byKey.get(k)!)).toBe(true);
    await waitFor(async () => (await q.clean()).reclaimed === 1, {
      what: 'the 30 ms lease to expire',
    });
    expect(await q.purgeDead('doomed')).toBe(1);

    // Drain: complete whatever comes, until nothing is left anywhere.
    const done: string[] = [];
    await waitFor(
      async () => {
        await q.clean();
        for (const j of await q.lease({ count: 10, leaseMs: 10_000, workerId: worker })) {
          expect(await q.progress(j, { at: 'end' })).toBe(true);
          expect(await q.complete(j)).toBe(true);
          done.push(j.data.k);
        }
        const n = await q.counts();
        return n.pending + n.delayed + n.leased + n.dead === 0;
      },
      { what: 'the queue to drain', timeoutMs: 5_000 },
    );
    expect(done.sort()).toEqual(['delayed', 'expires', 'named', 'retry']);
    await q.deregisterWorker(worker);

    // Counters, the heartbeat record, this producer's add record, the cancels' answers and the
    // cancelled lease's acknowledgement id (they expire by themselves), the event log (capped: `events: { maxLen }`;
    // none with `events: false`) and the per-minute counts (a day, bounded: docs/history.md).
    expect(await keysLeft(c, q.keys.base)).toEqual([
      'cc:*',
      'cx:*',
      'es',
      'hb',
      'id',
      'ik:*',
      'mt:completed',
      'mt:dead',
      'mt:failed',
      'tok',
      'wseq',
    ]);
    // (Two cancels: two answers.)
    expect(await keysMatching(c, `${q.options.prefix}:*`)).toHaveLength(12);
  });
});
