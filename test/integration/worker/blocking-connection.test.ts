/**
 * The idle wait's own connection (issue 24, item 8): its wait goes out only once the connection
 * is ready — never through its offline queue, where a reconcile could not take it back — and a
 * connection copied from a lazy client (`lazyConnect`, as the Nest module makes them) connects
 * at the first wait.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { waitParked, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
const lazy = new Redis(testRedisUrl(), { lazyConnect: true });
afterAll(async () => {
  await fx.cleanup();
  lazy.disconnect();
});
const worker = workersClosedAfterEach();

describe('the blocking connection', () => {
  it('of a lazy client connects at the first idle wait: a job added then is handed off', async () => {
    const q = fx.queue<string>({}, lazy);
    const ran: string[] = [];
    // A long idle timeout: only the wait itself can deliver the job in time.
    const w = worker(q, (job) => void ran.push(job.data), { idleTimeoutMs: 60_000 });
    await w.start();
    await waitParked(fx.client(), q, w.workerId);
    await q.add('handed off');
    await waitFor(() => ran.length === 1, { what: 'the job to run', timeoutMs: 10_000 });
    expect(ran).toEqual(['handed off']);
  });
});
