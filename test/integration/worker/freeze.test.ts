/**
 * A worker process frozen (SIGSTOP: a stopped container, a long VM pause) while it is parked: an
 * add hands a job off to it, its heartbeat lapses, clean() takes the job back and another
 * completes it. Resumed, the frozen worker must not start that job (it completed already): a
 * hand-off that reaches a worker long after its add starts only once adopted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { Worker, type WorkQueueOptions } from '../../../lib/index.js';
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
    await waitFor(async () => (await q.clean()).reclaimedFromWorkers === 1, {
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
});
