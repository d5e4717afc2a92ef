/**
 * A worker process frozen (SIGSTOP: a stopped container, a long VM pause) or its event loop
 * blocked: its heartbeat lapses or its leases expire, clean() takes its jobs back and another
 * completes them. Resumed, the worker must not start them (they completed already):
 * - parked, an add hands a job off to it: a hand-off that reaches a worker long after its add
 *   starts only once adopted;
 * - busy, with jobs prefetched: after such a gap a prefetched job starts only once a renewal
 *   said its lease is still ours.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { Worker, type WorkerOptions, type WorkQueueOptions } from '../../../lib/index.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { readLog, startWorkerChild, type WorkerChild } from '../../support/worker-child-process.js';
import { waitParked } from '../../support/worker.js';

const fx = new QueueFixture();
const children: WorkerChild[] = [];
const dir = mkdtempSync(path.join(os.tmpdir(), 'wq-freeze-'));
afterEach(async () => {
  for (const c of children) if (c.process.signalCode === null) c.process.kill('SIGCONT');
  await Promise.all(children.splice(0).map((c) => c.kill()));
});
afterAll(async () => {
  await fx.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

/** A worker process on queue `q` (closed after each test). */
function workerChild(
  q: { name: string; options: { prefix: string } },
  queueOptions: WorkQueueOptions,
  workerOptions: WorkerOptions,
  mode: 'work' | 'hang',
): WorkerChild {
  const child = startWorkerChild({
    redisUrl: testRedisUrl(),
    queue: q.name,
    queueOptions: { ...queueOptions, prefix: q.options.prefix },
    workerOptions,
    mode,
    workMs: 0,
  });
  children.push(child);
  return child;
}

describe('a frozen worker', () => {
  it('resumed after its hand-off was taken back and completed elsewhere: it never starts it', async () => {
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<string>(queueOptions);
    const execLog = path.join(dir, 'exec.log');
    const child = startWorkerChild({
      redisUrl: testRedisUrl(),
      queue: q.name,
      queueOptions: { ...queueOptions, prefix: q.options.prefix },
      workerOptions: {},
      mode: 'work',
      workMs: 0,
      execLog,
    });
    children.push(child);
    const workerId = await child.ready;
    await waitParked(fx.client(), q, workerId);
    // A live worker that beats (paused: it takes no job; it cleans nothing itself): with no beat
    // at all landing, clean() would take the silence for a Redis outage and judge no worker.
    const beating = new Worker(q, () => undefined, { cleanIntervalMs: 0 });
    await beating.start();
    await beating.pause();

    child.process.kill('SIGSTOP');
    // Handed off to the frozen worker (its wait is still blocked in Redis).
    const { id } = await q.add('x', { id: 'frozen-1' });
    expect((await q.getJob(id))?.state).toBe('leased');
    // (Taken back from the frozen worker's hand-off list, or from the wake list when its wait
    // was between two BLMOVEs when it froze: either way, back in the queue.)
    await waitFor(async () => (await q.clean(), (await q.getJob(id))?.state === 'pending'), {
      what: 'the frozen worker taken for dead, its hand-off taken back',
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    const [lease] = await q.lease();
    expect(lease?.id).toBe(id);
    expect(await q.complete(lease!)).toBe(true);

    child.process.kill('SIGCONT');
    // Once it runs a job added after its resume, it has handled what it received before.
    const { id: after } = await q.add('y', { id: 'after-1' });
    await waitFor(() => readLog(execLog).some((l) => l.id === after), {
      what: 'the resumed worker runs a new job',
      timeoutMs: 10_000,
    });
    expect(readLog(execLog).map((l) => l.id)).toEqual([after]);
    expect(await q.getJob(id)).toMatchObject({ state: 'completed', attemptsMade: 1 });
    await beating.close();
  }, 30_000);

  it('reclaimed while parked, its wait still blocked in Redis: a hand-off it takes runs elsewhere within seconds, not after leaseMs', async () => {
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<string>(queueOptions);
    // A long idle wait: frozen, it stays blocked in Redis, first in line for the wake list.
    const child = workerChild(q, queueOptions, { idleTimeoutMs: 20_000 }, 'work');
    const frozen = await child.ready;
    await waitParked(fx.client(), q, frozen);
    const ran: string[] = [];
    const live = new Worker(q, (job) => void ran.push(job.data), { concurrency: 1 });
    await live.start();
    await waitParked(fx.client(), q, live.workerId);
    child.process.kill('SIGSTOP');
    await waitFor(async () => (await fx.client().zscore(q.keys.workers, frozen)) === null, {
      what: 'the frozen worker reclaimed (by the live one cleaning)',
      timeoutMs: 10_000,
    });
    // Handed off (the live worker is parked); the frozen worker's blocked wait pops it.
    const { id } = await q.add('j');
    // (Its handler runs before its completion lands: wait for the state, not for the call.)
    await waitFor(async () => (await q.getJob(id))?.state === 'completed', {
      what: 'the job completed by the live worker (its hand-off lease is 30 s)',
      timeoutMs: 8_000,
    });
    expect(ran).toEqual(['j']);
    expect(await q.getJob(id)).toMatchObject({ state: 'completed', leaseExpiries: 0 });
    // The note of the frozen worker goes by itself after its parked-until (21 s here).
    const ttl = await fx.client().pttl(q.keys.key('reclaimedWorkers'));
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(23_000);
    await live.close();
  }, 30_000);

  it('reclaimed while running a job and parked for more: the wake-up of that job reaches a live worker', async () => {
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<string>(queueOptions);
    // Room for a second job: while the first hangs, it waits for more (parked, blocked).
    const child = workerChild(q, queueOptions, { concurrency: 2, idleTimeoutMs: 20_000 }, 'hang');
    const frozen = await child.ready;
    const { id } = await q.add('held');
    await waitFor(async () => (await q.getJob(id))?.state === 'leased', { what: 'held' });
    await waitParked(fx.client(), q, frozen);
    const ran: string[] = [];
    // A live worker whose own idle wait is long: only a wake-up brings it the job soon.
    const live = new Worker(q, (job) => void ran.push(job.data), { idleTimeoutMs: 20_000 });
    await live.start();
    await waitParked(fx.client(), q, live.workerId);
    child.process.kill('SIGSTOP');
    // Reclaimed (by the live worker's cleans), the job's wake-up taken by the frozen wait,
    // swept back, and the live worker woken.
    await waitFor(() => ran.includes('held'), {
      what: 'the live worker runs it',
      timeoutMs: 8_000,
    });
    await live.close();
  }, 30_000);

  /** Lease and complete here every one of `ids` (what else comes is completed too). */
  async function completeHere(q: ReturnType<typeof fx.queue<string>>, ids: string[]) {
    const done = new Set<string>();
    await waitFor(
      async () => {
        for (const lease of await q.lease({ count: 10 })) {
          if (await q.complete(lease)) done.add(lease.id);
        }
        return ids.every((id) => done.has(id));
      },
      { what: `${ids.join(', ')} completed here`, timeoutMs: 10_000, intervalMs: 50 },
    );
  }

  it('resumed after its prefetched jobs were taken back and completed elsewhere: it never starts them', async () => {
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<string>(queueOptions);
    const execLog = path.join(dir, 'exec-prefetched.log');
    const child = startWorkerChild({
      redisUrl: testRedisUrl(),
      queue: q.name,
      queueOptions: { ...queueOptions, prefix: q.options.prefix },
      workerOptions: { concurrency: 1, prefetch: 3 },
      mode: 'sleep',
      workMs: 6_000,
      execLog,
    });
    children.push(child);
    await child.ready;
    const beating = new Worker(q, () => undefined, { cleanIntervalMs: 0 });
    await beating.start();
    await beating.pause();

    const ids: string[] = [];
    for (let i = 1; i <= 4; i++) ids.push((await q.add(String(i), { id: `p-${i}` })).id);
    const [first, ...prefetched] = ids as [string, ...string[]];
    // The first runs (its handler sleeps), the other three wait in the child's buffer.
    await waitFor(
      async () =>
        readLog(execLog).length === 1 &&
        (await Promise.all(ids.map((id) => q.getJob(id)))).every((j) => j?.state === 'leased'),
      { what: 'one job running and three prefetched in the child', timeoutMs: 10_000 },
    );
    child.process.kill('SIGSTOP');
    await waitFor(async () => (await q.clean()).reclaimedFromWorkers > 0, {
      what: 'the frozen worker taken for dead, its jobs taken back',
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    await completeHere(q, prefetched);

    child.process.kill('SIGCONT');
    const { id: after } = await q.add('y', { id: 'p-after' });
    await waitFor(() => readLog(execLog).some((l) => l.id === after || prefetched.includes(l.id)), {
      what: 'the resumed worker runs another job',
      timeoutMs: 15_000,
    });
    expect(readLog(execLog).map((l) => l.id)).toEqual([first, after]);
    for (const id of prefetched) {
      expect(await q.getJob(id)).toMatchObject({ state: 'completed', attemptsMade: 1 });
    }
    await beating.close();
  }, 40_000);

  it.each([
    { concurrency: 1, prefetch: 3, jobs: 4, how: 'prefetched' },
    // (Both start in one go: the first handler blocks before the second would start.)
    { concurrency: 2, prefetch: 0, jobs: 2, how: 'leased in the same call as the blocking one' },
  ])(
    'its event loop blocked past its leases: jobs $how, completed elsewhere, never start',
    async ({ concurrency, prefetch, jobs, how }) => {
      const queueOptions: WorkQueueOptions = { leaseMs: 1_000 };
      const q = fx.queue<string>(queueOptions);
      const execLog = path.join(dir, `exec-blocked-${concurrency}.log`);
      // Added first: the child's first lease call takes them all (one to run, the others waiting).
      const ids: string[] = [];
      for (let i = 1; i <= jobs; i++) ids.push((await q.add(String(i), { id: `b-${i}` })).id);
      const [first, ...prefetched] = ids as [string, ...string[]];
      const child = startWorkerChild({
        redisUrl: testRedisUrl(),
        queue: q.name,
        queueOptions: { ...queueOptions, prefix: q.options.prefix },
        workerOptions: { concurrency, prefetch, cleanIntervalMs: 0 },
        // Long enough for the leases to lapse and the jobs to complete here meanwhile.
        mode: 'busy',
        busyMs: 8_000,
        execLog,
      });
      children.push(child);
      await child.ready;
      await waitFor(
        async () =>
          readLog(execLog).length === 1 &&
          (await Promise.all(ids.map((id) => q.getJob(id)))).every((j) => j?.state === 'leased'),
        { what: `one job blocking the child and the others ${how}`, timeoutMs: 10_000 },
      );
      const blockedAt = Date.now();
      let reclaimed = 0;
      await waitFor(async () => (reclaimed += (await q.clean()).reclaimed) >= prefetched.length, {
        what: 'the expired leases taken back',
        timeoutMs: 10_000,
        intervalMs: 100,
      });
      await completeHere(q, prefetched);
      // (The premise: all that happened while the child's loop was still blocked.)
      expect(Date.now() - blockedAt).toBeLessThan(8_000);

      const { id: after } = await q.add('y', { id: 'b-after' });
      await waitFor(
        () => readLog(execLog).some((l) => l.id === after || prefetched.includes(l.id)),
        {
          what: 'the unblocked worker runs another job',
          timeoutMs: 20_000,
        },
      );
      expect(readLog(execLog).map((l) => l.id)).toEqual([first, after]);
    },
    40_000,
  );

  it('the first clean to find no beat landed for half the timeout judges nobody; one half a timeout later does', async () => {
    // (After an outage a clean can get through before the beats: a Cluster refuses every command
    // while another master fails over. Here the only worker is stopped: it really is silent.)
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<string>(queueOptions);
    const child = startWorkerChild({
      redisUrl: testRedisUrl(),
      queue: q.name,
      queueOptions: { ...queueOptions, prefix: q.options.prefix },
      workerOptions: { cleanIntervalMs: 0 },
      mode: 'sleep',
      workMs: 0,
    });
    children.push(child);
    const workerId = await child.ready;
    const admin = fx.client();
    child.process.kill('SIGSTOP');
    // Silent for longer than the timeout (Redis time; read, not cleaned meanwhile).
    await waitFor(
      async () => {
        const [s, us] = await admin.time();
        const beat = Number(await admin.zscore(q.keys.workers, workerId));
        return Number(s) * 1000 + Math.floor(Number(us) / 1000) - beat > 1_200;
      },
      { what: 'the worker silent for longer than the timeout', timeoutMs: 10_000 },
    );
    expect(await q.clean()).toMatchObject({ deadWorkers: 0 });
    await waitFor(async () => (await q.clean()).deadWorkers === 1, {
      what: 'the silent worker judged half a timeout later',
      timeoutMs: 10_000,
      intervalMs: 50,
    });
  }, 30_000);
});
