/**
 * Shared by the frozen-worker tests (freeze, freeze-prefetched): the queues of one test file,
 * the worker processes its tests freeze (SIGSTOP), resumed and killed after each test, and a
 * temporary folder for their logs, removed after the file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach } from '@jest/globals';
import {
  Worker,
  type WorkerOptions,
  type WorkQueue,
  type WorkQueueOptions,
} from '../../../lib/index.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import {
  startWorkerChild,
  type ChildConfig,
  type WorkerChild,
} from '../../support/worker-child-process.js';

/**
 * For one test file: `fx` for its queues, `dir` for the logs of its worker processes, and
 * startChild() / workerChild() to start them (each resumed and killed after its test), and
 * completeHere() to finish elsewhere what a frozen one held.
 */
export function frozenWorkers() {
  const fx = new QueueFixture();
  const children: WorkerChild[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wq-freeze-'));
  const beating: Worker<string>[] = [];
  afterEach(async () => {
    for (const c of children) if (c.process.signalCode === null) c.process.kill('SIGCONT');
    await Promise.all(children.splice(0).map((c) => c.kill()));
    await Promise.all(beating.splice(0).map((w) => w.close()));
  });
  afterAll(async () => {
    await fx.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  /**
   * A worker process (test/fixtures/worker-child.ts) on queue `q`, with `config` for the rest
   * (killed after each test).
   */
  function startChild(
    q: { name: string; options: { prefix: string } },
    queueOptions: WorkQueueOptions,
    config: Omit<ChildConfig, 'redisUrl' | 'queue' | 'queueOptions'> & { redisUrl?: string },
  ): WorkerChild {
    const child = startWorkerChild({
      ...config,
      redisUrl: config.redisUrl ?? testRedisUrl(),
      queue: q.name,
      queueOptions: { ...queueOptions, prefix: q.options.prefix },
    });
    children.push(child);
    return child;
  }

  /** A worker process on queue `q` (closed after each test). */
  function workerChild(
    q: { name: string; options: { prefix: string } },
    queueOptions: WorkQueueOptions,
    workerOptions: WorkerOptions,
    mode: 'work' | 'hang',
  ): WorkerChild {
    return startChild(q, queueOptions, { workerOptions, mode, workMs: 0 });
  }

  /** Lease and complete here every one of `ids` (what else comes is completed too). */
  async function completeHere(q: WorkQueue<string>, ids: string[]): Promise<void> {
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

  /**
   * A live worker in this process that beats and takes nothing (paused): clean() then judges
   * the frozen one by its silence alone. Closed after each test.
   */
  async function beatingWorker(q: WorkQueue<string>): Promise<Worker<string>> {
    const w = new Worker(q, () => undefined, { cleanIntervalMs: 0 });
    beating.push(w);
    await w.start();
    await w.pause();
    return w;
  }

  return { fx, dir, startChild, workerChild, completeHere, beatingWorker };
}
