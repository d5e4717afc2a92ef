/**
 * Shared by the frozen-worker tests (freeze, freeze-prefetched): the queues of one test file,
 * the worker processes its tests freeze (SIGSTOP), resumed and killed after each test, and a
 * temporary folder for their logs, removed after the file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach } from '@jest/globals';
import type { WorkerOptions, WorkQueueOptions } from '../../../lib/index.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { startWorkerChild, type WorkerChild } from '../../support/worker-child-process.js';

/**
 * For one test file: `fx` for its queues, `children` the worker processes killed after each test
 * (workerChild() adds its own; push there any started otherwise), `dir` for their logs.
 */
export function frozenWorkers() {
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

  return { fx, children, dir, workerChild };
}
