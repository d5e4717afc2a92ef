/**
 * A delayed job starts when it is due, not when Redis next checks its blocked clients' timeouts:
 * Redis ends a blocking wait on its timer tick (every 1000 / hz ms; hz 1 here, so up to a second
 * late), so an idle worker looks at the due time itself — its call also ends its wait, as Redis
 * checks the timeouts after each command. The job is made due just after a tick (found with a
 * blocking wait of 1 ms, which Redis ends on the tick), the next tick a second later, and nothing
 * else talks to this Redis meanwhile (heartbeats and cleans far apart).
 */
import { beforeAll, expect, it } from '@jest/globals';
import { Worker, WorkQueue } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { privateRedis } from '../../support/private-redis.js';
import { idleWaitBlocked } from '../../support/worker.js';
import { waitFor } from '../../support/wait.js';

const redis = privateRedis();
beforeAll(async () => void (await redis.admin.config('SET', 'hz', '1')));

it('a delayed job starts at its due time, not at the next timer tick of Redis', async () => {
  const q = new WorkQueue<string>(redis.client(), uniqueName(), {
    logger: false,
    heartbeatTimeoutMs: 120_000,
  });
  const started = new Map<string, number>();
  const worker = new Worker(q, (job) => void started.set(job.data, Date.now()), {
    concurrency: 1,
    idleTimeoutMs: 60_000,
    heartbeatIntervalMs: 60_000,
    cleanIntervalMs: 60_000,
  });
  try {
    await worker.start();
    await waitFor(() => idleWaitBlocked(redis.admin, worker), { what: 'the worker waiting' });
    const ticker = redis.client();
    await ticker.blmove('wq-test-none', 'wq-test-none', 'LEFT', 'RIGHT', 0.001); // ends on a tick
    const dueAt = Date.now() + 100;
    await q.add('d', { delayMs: 100 });
    await waitFor(() => started.has('d'), { timeoutMs: 5_000, what: 'the delayed job to start' });
    // On time: a few ms late; at the next tick: ~900 ms late.
    expect(started.get('d')! - dueAt).toBeLessThan(700);
  } finally {
    await worker.close({ timeoutMs: 0 });
  }
});
