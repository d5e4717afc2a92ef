/**
 * A worker made while Redis refuses writes for a state that passes (out of memory under
 * noeviction) starts once it passes: its autostart keeps trying (it failed once and for good, a
 * new or autoscaled worker never draining the backlog that filled the memory). An explicit
 * start() still rejects, bounded. (A private Redis: its maxmemory is changed.)
 */
import { describe, expect, it } from '@jest/globals';
import { WorkQueue, WorkQueueError, type Worker } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { privateRedis } from '../../support/private-redis.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const redis = privateRedis();
const worker = workersClosedAfterEach(() => undefined);

describe('a worker started while Redis is out of memory', () => {
  it('starts once memory frees (autostart); an explicit start() rejects REDIS_UNAVAILABLE', async () => {
    const q = new WorkQueue<number>(redis.client(), uniqueName(), {
      logger: false,
      commandTimeoutMs: 1_000,
    });
    await q.add(1);
    await redis.admin.config('SET', 'maxmemory-policy', 'noeviction');
    await redis.admin.config('SET', 'maxmemory', '1');
    try {
      const done: number[] = [];
      const errors: unknown[] = [];
      const w: Worker<number> = worker(q, (job) => void done.push(job.data));
      w.on('error', (e) => errors.push(e));
      await waitFor(() => errors.length > 0, { what: 'the refused start reported' });
      expect(errors[0]).toBeInstanceOf(WorkQueueError);
      expect(errors[0]).toMatchObject({
        code: 'REDIS_UNAVAILABLE',
        message: expect.stringContaining('OOM'),
      });
      const explicit = worker(q, () => undefined, { autostart: false });
      await expect(explicit.start()).rejects.toMatchObject({ code: 'REDIS_UNAVAILABLE' });
      await redis.admin.config('SET', 'maxmemory', '0');
      await waitFor(() => done.length === 1, { timeoutMs: 15_000, what: 'the job run' });
      expect((await q.counts()).workers).toBe(1);
    } finally {
      await redis.admin.config('SET', 'maxmemory', '0');
    }
  });
});
