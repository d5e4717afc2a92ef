/**
 * An addBulk over several scripts whose scripts do not all run: the error says which jobs each
 * wrote (with their ids) and which failed.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { WorkQueueError } from '../../../lib/index.js';
import { errorOf } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('an addBulk whose scripts do not all run', () => {
  it("rejects with the failed script's error and says which jobs each script wrote", async () => {
    const q = fx.queue<number>();
    // A key of the wrong type where the second script's payloads go (a tampered key): it fails
    // there; the first and the third script are written whole.
    await fx.client().set(q.keys.dataBucket(3_000), 'not a hash');
    const e = (await errorOf(
      q.addBulk(Array.from({ length: 5_000 }, (_, i) => ({ data: i }))),
    )) as WorkQueueError;
    expect(e).toBeInstanceOf(WorkQueueError);
    expect(e.message).toMatch(/addBulk of 5000 jobs in 3 scripts: 1 failed, the others written/);
    expect(e.problems).toEqual([
      'jobs 0-1999: written (ids 1 … 2000)',
      expect.stringMatching(/^jobs 2000-3999: failed: .*WRONGTYPE/),
      'jobs 4000-4999: written (ids 4001 … 5000)',
    ]);
    expect((await q.getJob('1'))?.data).toBe(0);
    expect((await q.getJob('5000'))?.data).toBe(4_999);
  });
});
