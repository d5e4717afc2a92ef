/**
 * A worker process frozen (SIGSTOP: a stopped container, a long VM pause): its heartbeat lapses,
 * clean() takes its jobs back and another completes them. Resumed, the worker must not start
 * them (they completed already):
 * - parked, an add hands a job off to it: a hand-off that reaches a worker long after its add
 *   starts only once adopted;
 * - busy, with jobs prefetched (or its event loop blocked): freeze-prefetched.test.ts.
 * And the first clean to find a frozen worker silent judges nobody; one half a timeout later does.
 */
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { Worker, type WorkQueueOptions } from '../../../lib/index.js';
import { waitFor } from '../../support/wait.js';
import { readLog } from '../../support/worker-child-process.js';
import { waitParked } from '../../support/worker.js';
import { frozenWorkers } from './freeze-support.js';

const { fx, dir, startChild, workerChild, beatingWorker } = frozenWorkers();

describe('a frozen worker', () => {
  it('resumed after its hand-off was taken back and completed elsewhere: it never starts it', async () => {
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<string>(queueOptions);
    const execLog = path.join(dir, 'exec.log');
    const child = startChild(q, queueOptions, {
      workerOptions: {},
      mode: 'work',
      workMs: 0,
      execLog,
    });
    const workerId = await child.ready;
    await waitParked(fx.client(), q, workerId);
    // A live worker that beats (paused: it takes no job; it cleans nothing itself): with no beat
    // at all landing, clean() would take the silence for a Redis outage and judge no worker.
    await beatingWorker(q);

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

  it('the first clean to find no beat landed for half the timeout judges nobody; one half a timeout later does', async () => {
    // (After an outage a clean can get through before the beats: a Cluster refuses every command
    // while another master fails over. Here the only worker is stopped: it really is silent.)
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<string>(queueOptions);
    const child = startChild(q, queueOptions, {
      workerOptions: { cleanIntervalMs: 0 },
      mode: 'sleep',
      workMs: 0,
    });
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
