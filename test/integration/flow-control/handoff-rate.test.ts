/**
 * A hand-off counts as a start in the rate logs it falls under (the queue's, its group's). One
 * that goes back to its pending list before any worker took it never started: it leaves those
 * logs, so its next lease is counted once, not twice in the window.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { WorkQueue, WorkQueueOptions } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/**
 * Job `first` handed off to a parked worker that unparks before popping it, behind an urgent
 * job a lease takes alone: the batch fills up first, and the hand-off goes back pending.
 */
async function handedOffThenBack(
  options: WorkQueueOptions,
  group?: string,
): Promise<{ q: WorkQueue<string>; id: string }> {
  const q = fx.queue<string>(options);
  const admin = fx.client();
  await q.counts(); // the limiter written (it leaves a wake-up for parked workers: none here)
  await admin.del(q.keys.wake);
  await admin.zadd(q.keys.key('parked'), Date.now() + 60_000, '42');
  const { id } = await q.add('first', group === undefined ? {} : { group });
  expect((await q.getJob(id))?.state).toBe('leased'); // handed off
  await q.add('urgent', { priority: 0 });
  await admin.zrem(q.keys.key('parked'), '42');
  expect((await q.lease({ count: 1 })).map((j) => j.data)).toEqual(['urgent']);
  expect((await q.getJob(id))?.state).toBe('pending');
  return { q, id };
}

describe('a hand-off that goes back before any worker took it', () => {
  it("leaves the queue's rate log: the window's second start is its lease", async () => {
    const { q, id } = await handedOffThenBack({ limiter: { max: 2, durationMs: 60_000 } });
    // Started in the window: 'urgent' only. Counted twice, 'first' waited out the minute.
    expect((await q.lease({ count: 5 })).map((j) => j.id)).toEqual([id]);
    expect(await q.lease({ count: 5 })).toEqual([]); // the limit still holds
  });

  it("leaves its group's rate log: the group's one start in the window is its lease", async () => {
    const { q, id } = await handedOffThenBack(
      { groups: { limiter: { max: 1, durationMs: 60_000 } } },
      'tenant',
    );
    expect((await q.lease({ count: 5 })).map((j) => j.id)).toEqual([id]);
    await q.add('second', { group: 'tenant' });
    expect(await q.lease({ count: 5 })).toEqual([]); // the group's limit still holds
  });
});
