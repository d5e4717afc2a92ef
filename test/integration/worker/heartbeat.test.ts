/**
 * Worker runtime: heartbeats, with workers in child processes. A worker killed with SIGKILL
 * loses its jobs at the next clean() once its heartbeat lapses, long before its (long) leases
 * would expire; a worker whose handler blocks the event loop keeps beating (from a thread), so
 * clean() leaves its job alone and the job completes exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { Worker } from '../../../lib/index.js';
import type { CleanReport, WorkQueueOptions } from '../../../lib/index.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { readLog, startWorkerChild, type WorkerChild } from '../../support/worker-child-process.js';

const fx = new QueueFixture();
const children: WorkerChild[] = [];
const dir = mkdtempSync(path.join(os.tmpdir(), 'wq-heartbeat-'));
afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill()));
});
afterAll(async () => {
  await fx.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const HEARTBEAT_TIMEOUT_MS = 1_000;

describe('Worker heartbeat (child processes)', () => {
  it('a SIGKILLed worker: clean() reclaims its job after the heartbeat lapses, not the lease', async () => {
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS };
    const q = fx.queue<string>(queueOptions);
    const execLog = path.join(dir, 'kill-exec.log');
    const child = startWorkerChild({
      redisUrl: testRedisUrl(),
      queue: q.name,
      queueOptions: { ...queueOptions, prefix: q.options.prefix },
      workerOptions: { leaseMs: 60_000 },
      mode: 'hang',
      execLog,
    });
    children.push(child);
    const workerId = await child.ready;
    const { id } = await q.add('stuck');
    await waitFor(() => readLog(execLog).length === 1, { what: 'child took the job' });
    const leased = await q.getJob(id);
    expect(leased).toMatchObject({ state: 'leased' });
    // A job handed off to the parked child runs at once, on the hand-off's lease; the child's own
    // 60 s lease comes with its adoption, the child's next call (under load, after this read).
    await waitFor(async () => ((await q.getJob(id))?.at ?? 0) - Date.now() > 50_000, {
      what: "the child's 60 s lease",
    });
    // Alive and beating: clean() leaves it alone.
    expect(await q.clean()).toMatchObject({ deadWorkers: 0, reclaimedFromWorkers: 0 });

    await child.kill();
    const killedAt = Date.now();
    const reports: CleanReport[] = [];
    await waitFor(
      async () => {
        const r = await q.clean();
        reports.push(r);
        return r.deadWorkers >= 1;
      },
      { what: 'clean() reports the dead worker', timeoutMs: 5_000, intervalMs: 50 },
    );
    const recoveredMs = Date.now() - killedAt;
    console.log(
      `kill -9 -> job reclaimed by clean(): ${recoveredMs} ms ` +
        `(heartbeatTimeoutMs ${HEARTBEAT_TIMEOUT_MS}, leaseMs 60000, clean every 50 ms)`,
    );
    expect(reports.at(-1)).toMatchObject({ deadWorkers: 1, reclaimedFromWorkers: 1 });
    expect(reports.slice(0, -1).every((r) => r.deadWorkers === 0)).toBe(true);
    expect(recoveredMs).toBeLessThan(5_000);
    expect(await q.getJob(id)).toMatchObject({ state: 'pending', leaseExpiries: 0 }); // its first death: a suspect now, not counted
    expect((await q.counts()).workers).toBe(0);
    expect(await fx.client().zscore(q.keys.workers, workerId)).toBeNull();

    // A new worker completes it.
    const done: string[] = [];
    const w = new Worker(q, () => 'rescued');
    w.on('completed', (job) => done.push(job.id));
    try {
      await waitFor(() => done.length === 1, { what: 'job completed by a new worker' });
      expect(done).toEqual([id]);
      expect(await q.getJob(id)).toMatchObject({ state: 'completed', attemptsMade: 1 });
    } finally {
      await w.close();
    }
  });

  it('a handler blocking the event loop 3x heartbeatTimeoutMs: clean() reclaims nothing, one completion', async () => {
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS };
    const q = fx.queue<string>(queueOptions);
    const admin = fx.client();
    const execLog = path.join(dir, 'busy-exec.log');
    const doneLog = path.join(dir, 'busy-done.log');
    const BUSY_MS = 3 * HEARTBEAT_TIMEOUT_MS;
    const child = startWorkerChild({
      redisUrl: testRedisUrl(),
      queue: q.name,
      queueOptions: { ...queueOptions, prefix: q.options.prefix },
      workerOptions: { leaseMs: 10_000 },
      mode: 'busy',
      busyMs: BUSY_MS,
      execLog,
      doneLog,
    });
    children.push(child);
    const workerId = await child.ready;
    const { id } = await q.add('heavy');
    // The child logs (synchronously) right before it starts blocking.
    await waitFor(() => readLog(execLog).length === 1, { what: 'handler started' });
    const blockStart = Date.now();
    const beatAtStart = Number(await admin.zscore(q.keys.workers, workerId));

    let cleans = 0;
    let cleansWhileBlocked = 0;
    let lastCleanWhileBlocked = 0;
    const reports: CleanReport[] = [];
    let beatsSeen = 0;
    let lastBeat = beatAtStart;
    while (readLog(doneLog).length === 0) {
      if (Date.now() - blockStart > BUSY_MS + 10_000) throw new Error('job never completed');
      const r = await q.clean();
      cleans++;
      if (Date.now() - blockStart < BUSY_MS - 100) {
        cleansWhileBlocked++;
        lastCleanWhileBlocked = Date.now() - blockStart;
      }
      reports.push(r);
      const beat = Number(await admin.zscore(q.keys.workers, workerId));
      if (beat > lastBeat) beatsSeen++;
      lastBeat = beat;
      await sleep(100);
    }
    console.log(
      `busy loop of ${BUSY_MS} ms: ${cleans} clean() calls (${cleansWhileBlocked} while blocked), ` +
        `${beatsSeen} heartbeats seen meanwhile`,
    );
    // Cleans ran through the block (not a count: this machine may be slow), the last one well
    // past a heartbeat timeout into it (the heartbeat thread kept the worker alive).
    expect(cleansWhileBlocked).toBeGreaterThanOrEqual(3);
    expect(lastCleanWhileBlocked).toBeGreaterThanOrEqual(1.5 * HEARTBEAT_TIMEOUT_MS);
    const total = reports.reduce(
      (a, r) => a + r.reclaimed + r.reclaimedFromWorkers + r.deadWorkers + r.deadLettered,
      0,
    );
    expect(total).toBe(0);
    // The thread kept beating while the main thread was stuck.
    expect(beatsSeen).toBeGreaterThanOrEqual(5);
    expect(readLog(execLog)).toEqual([{ id, pid: child.pid }]);
    expect(readLog(doneLog)).toEqual([{ id, pid: child.pid }]);
    expect(await q.getJob(id)).toMatchObject({ state: 'completed', attemptsMade: 1 });
    await child.close();
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, workers: 0 });
  });
});
