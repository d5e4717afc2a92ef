/**
 * Notices sent while a worker's notice channel reconnects (pub/sub keeps nothing): the worker
 * catches up once subscribed again. A prefetched job cancelled meanwhile never starts, a running
 * one's signal aborts, and the prefetched jobs of a group paused meanwhile go back. (Before: the
 * cancelled job started once a slot freed, a running one learned it at its next renewal — 10 s
 * on defaults — and a paused group's prefetched jobs all started.)
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';

let redis: RedisHandle;
let admin: Redis;
const clients: Redis[] = [];

beforeAll(async () => {
  // A private Redis: CLIENT KILL TYPE pubsub drops only this file's subscribers.
  redis = await startRedis();
  admin = new Redis(redis.url);
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
  admin.disconnect();
  await redis.dispose();
});

type Data = { block?: boolean; n: number };

/**
 * A worker (concurrency 1, prefetch 3) whose handler records starts and can be held, running a
 * blocking job `a` with `more` jobs prefetched (added with it, before its first lease: a busy
 * worker does not wait for jobs added later, docs/internals/hand-off.md). `retry`: its client's
 * (and so its subscriber's) reconnect delay, or null: never.
 */
async function setUp(
  retry: number | null = 50,
  more: Array<{ data: Data; opts?: { group?: string } }> = [],
) {
  const client = new Redis(redis.url, { retryStrategy: () => retry });
  clients.push(client);
  const q = new WorkQueue<Data>(client, uniqueName(), { logger: false, commandTimeoutMs: 500 });
  const started: string[] = [];
  const aborted: string[] = [];
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const a = await q.add({ block: true, n: 0 }, { priority: 1 }); // (leased first, so it runs)
  const extra = await q.addBulk(more);
  const worker = new Worker(
    q,
    async (job) => {
      started.push(job.id);
      job.signal.addEventListener('abort', () => aborted.push(job.id));
      if (job.data.block) await Promise.race([held, new Promise((r) => setTimeout(r, 30_000))]);
    },
    { concurrency: 1, prefetch: 3 },
  );
  const errors: string[] = [];
  worker.on('error', (e) => errors.push(String(e)));
  await worker.start();
  await waitFor(
    async () => ((await admin.pubsub('NUMSUB', q.keys.noticeChannel)) as unknown[])[1] === 1,
    { what: 'the worker subscribed' },
  );
  await waitFor(() => started.includes(a.id), { what: 'the blocking job running' });
  await waitFor(async () => (await q.counts()).leased === 1 + more.length, {
    what: 'the jobs added with it prefetched',
  });
  return { q, worker, started, aborted, release, a, extra, errors };
}

/** Drop the worker's notice channel; resolves once it is down (it reconnects by itself). */
async function dropNotices(): Promise<void> {
  await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
}

describe('notices sent while the notice channel reconnects', () => {
  it('a prefetched job cancelled meanwhile never starts', async () => {
    const { q, worker, started, release, extra } = await setUp(50, [{ data: { n: 1 } }]);
    const b = extra[0]!;
    await dropNotices();
    expect(await q.cancel(b.id)).toBe(true);
    release();
    const c = await q.add({ n: 2 });
    await waitFor(async () => (await q.getJob(c.id))?.state === 'completed', {
      what: 'a job added after the cancel completed',
    });
    expect(started).not.toContain(b.id);
    expect(await q.getJob(b.id)).toBeNull();
    await worker.close();
  });

  it('a prefetched job dropped once the cancel is heard, after the last run ended: the worker takes new jobs', async () => {
    const { q, worker, release, a, extra } = await setUp(1_000, [{ data: { n: 1 } }]);
    await dropNotices();
    await q.counts(); // (a round trip: the worker has seen its channel close)
    expect(await q.cancel(extra[0]!.id)).toBe(true);
    release();
    await waitFor(async () => (await q.getJob(a.id))?.state === 'completed', {
      what: 'a completed',
    });
    const { ctx } = worker as unknown as { ctx: { runs: { held: number } } };
    await waitFor(() => ctx.runs.held === 0, {
      what: 'the cancelled job dropped',
      timeoutMs: 8_000,
    });
    // Nothing runs, nothing is prefetched, no call is in flight: the worker must wait for work.
    const c = await q.add({ n: 2 });
    await waitFor(async () => (await q.getJob(c.id))?.state === 'completed', {
      what: 'a job added afterwards completed',
    });
    await worker.close();
  });

  it("a running job cancelled meanwhile: its signal aborts once the channel is back, not at the lease's next renewal", async () => {
    const { q, worker, aborted, a, release } = await setUp();
    await dropNotices();
    expect(await q.cancel(a.id)).toBe(true);
    await waitFor(() => aborted.includes(a.id), { what: "the running job's signal aborted" });
    release();
    await worker.close();
  });

  it('a group paused meanwhile: its prefetched job goes back, not started; it runs once the group resumes', async () => {
    const {
      q,
      worker,
      started,
      release,
      extra: grouped,
    } = await setUp(50, [{ data: { n: 1 }, opts: { group: 'g' } }]);
    await dropNotices();
    await q.pauseGroup('g');
    release();
    const c = await q.add({ n: 3 });
    await waitFor(async () => (await q.getJob(c.id))?.state === 'completed', {
      what: 'a job added after the pause completed',
    });
    for (const r of grouped) {
      expect(started).not.toContain(r.id);
      expect((await q.getJob(r.id))?.state).toBe('pending');
    }
    await q.resumeGroup('g');
    await waitFor(() => grouped.every((r) => started.includes(r.id)), {
      what: 'the group ran after its resume',
    });
    await worker.close();
  });

  it('a queue paused meanwhile: its prefetched jobs go back, not started; they run once it resumes', async () => {
    const { q, worker, started, release, a, extra } = await setUp(1_000, [{ data: { n: 1 } }]);
    const b = extra[0]!;
    await dropNotices();
    await q.counts(); // (a round trip: the worker has seen its channel close)
    release();
    // a completes while the channel is down (b waits), then the queue pauses: no lease reply
    // tells the worker, only the channel would have.
    await waitFor(async () => (await q.getJob(a.id))?.state === 'completed', {
      what: 'a completed',
    });
    await q.pause();
    await waitFor(async () => (await q.getJob(b.id))?.state === 'pending', {
      what: 'b given back',
      timeoutMs: 8_000,
    });
    expect(started).not.toContain(b.id);
    await q.resume();
    await waitFor(() => started.includes(b.id), { what: 'b ran after the resume' });
    await worker.close();
  });

  it('a notice channel that ends for good (a retryStrategy that gives up) holds no job: prefetched jobs start', async () => {
    const { worker, started, release, errors, extra } = await setUp(null, [{ data: { n: 1 } }]);
    const b = extra[0]!;
    await dropNotices();
    await waitFor(() => errors.some((e) => /notice channel ended/.test(e)), {
      what: 'the worker told its notice channel ended',
    });
    release();
    await waitFor(() => started.includes(b.id), { what: 'b started' });
    await worker.close();
  });
});
