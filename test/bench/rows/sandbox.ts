/**
 * Rows "sandbox": sandboxed handlers. Tiny jobs/s of ONE worker at concurrency 4 with its
 * handler in-process, in a pool of 4 worker threads and in a pool of 4 child processes (`n`
 * pre-added jobs after `warmup` untimed ones, the worker's start excluded); and the start-up of
 * a pool of 4: ms from creating the worker, 4 jobs of 200 ms waiting, to the 4th completion,
 * less the 200 ms (the median of `samples`, each on a fresh queue). Ours:
 * `new Worker(queue, { file, mode, poolSize: 4 }, { concurrency: 4 })`; BullMQ's sandboxed
 * processors: `new Worker(name, file, { concurrency: 4, useWorkerThreads })` (a pool of up to
 * `concurrency` children). Both run rows/sandbox-handler.mjs with the child's Node options (the
 * TypeScript loader: ours runs from its sources, so its sandbox entry is compiled by it at each
 * start; BullMQ's is its built JavaScript).
 */
import { fileURLToPath } from 'node:url';
import { addInChunks, onError, payloads, QUEUE } from '../jobs.js';
import type { Adapter, JobData, LibName } from '../libs/types.js';
import { BULLMQ_WORKER_OPTIONS, oursQueueOptions } from '../libs/settings.js';
import type { Settings } from '../options.js';
import type { ChildParams, ChildResult } from '../protocol.js';
import { baseParams, type RowPlan, type RowSpec } from '../row.js';
import { median } from '../util.js';

type Variant = 'inProcess' | 'thread' | 'process';

const HANDLER = fileURLToPath(new URL('./sandbox-handler.mjs', import.meta.url));
const POOL = 4;
const HOLD_MS = 200;
const LIBS: readonly LibName[] = ['ours', 'bullmq'];

interface Running {
  close(): Promise<void>;
}

/** A worker of `lib` on `queue` at concurrency POOL, its handler as `variant` says. */
async function startWorker(
  lib: LibName,
  p: ChildParams,
  variant: Variant,
  queue: string,
  onCompleted: () => void,
): Promise<Running> {
  if (lib === 'ours') {
    const [{ Redis }, { Worker, WorkQueue }] = await Promise.all([
      import('ioredis'),
      import('../../../lib/index.js'),
    ]);
    const redis = new Redis({ host: p.host, port: p.port });
    const q = new WorkQueue<JobData, void>(redis, queue, oursQueueOptions(false));
    const handler =
      variant === 'inProcess'
        ? async () => undefined
        : { file: HANDLER, mode: variant, poolSize: POOL };
    const worker = new Worker(q, handler, { concurrency: POOL });
    worker.on('completed', onCompleted);
    worker.on('error', onError);
    return {
      close: async () => {
        await worker.close();
        await redis.quit();
      },
    };
  }
  const { Worker } = await import('bullmq');
  const worker = new Worker<JobData, void>(
    queue,
    variant === 'inProcess' ? async () => undefined : HANDLER,
    {
      connection: { host: p.host, port: p.port },
      concurrency: POOL,
      ...BULLMQ_WORKER_OPTIONS,
      ...(variant === 'thread' ? { useWorkerThreads: true } : {}),
    },
  );
  worker.on('completed', onCompleted);
  worker.on('error', onError);
  return { close: () => worker.close() };
}

/** Resolves the time of the `target`-th completion; `tick` counts one. */
function completions(target: number, at: (count: number) => void = () => undefined) {
  let count = 0;
  let resolve!: (t: number) => void;
  const done = new Promise<number>((r) => (resolve = r));
  const tick = () => {
    count += 1;
    at(count);
    if (count === target) resolve(performance.now());
  };
  return { done, tick };
}

async function fill(adapter: Adapter, queue: string, jobs: JobData[], chunk: number) {
  const producer = await adapter.producer(queue);
  await producer.ready();
  for (let i = 0; i < jobs.length; i += chunk) await producer.addBulk(jobs.slice(i, i + chunk));
  await producer.close();
}

async function jobsPerSec(adapter: Adapter, p: ChildParams, variant: Variant): Promise<number> {
  const queue = `${QUEUE}-sandbox-${variant}`;
  const warmup = Math.max(1, p.warmup);
  const producer = await adapter.producer(queue);
  await producer.ready();
  await addInChunks(producer, 0, warmup + p.n, p.bulkSize, payloads(0));
  await producer.close();
  let warmAt = 0;
  const c = completions(warmup + p.n, (n) => {
    if (n === warmup) warmAt = performance.now();
  });
  const worker = await startWorker(adapter.lib, p, variant, queue, c.tick);
  const end = await c.done;
  await worker.close();
  return p.n / ((end - warmAt) / 1000);
}

async function startMs(adapter: Adapter, p: ChildParams, mode: 'thread' | 'process') {
  const samples: number[] = [];
  for (let s = 0; s < Math.max(1, p.samples); s++) {
    const queue = `${QUEUE}-sandbox-start-${mode}-${s}`;
    const held = Array.from({ length: POOL }, (_, i) => ({ i, sleepMs: HOLD_MS }));
    await fill(adapter, queue, held as JobData[], POOL);
    const c = completions(POOL);
    const t0 = performance.now();
    const worker = await startWorker(adapter.lib, p, mode, queue, c.tick);
    samples.push((await c.done) - t0 - HOLD_MS);
    await worker.close();
  }
  return median(samples);
}

export async function measureSandbox(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const sandbox = {
    inProcessPerSec: await jobsPerSec(adapter, p, 'inProcess'),
    threadPerSec: await jobsPerSec(adapter, p, 'thread'),
    processPerSec: await jobsPerSec(adapter, p, 'process'),
    threadStartMs: await startMs(adapter, p, 'thread'),
    processStartMs: await startMs(adapter, p, 'process'),
  };
  return {
    ok: true,
    lib: adapter.lib,
    kind: 'sandbox',
    value: sandbox.threadPerSec,
    jobs: p.n * 3,
    sandbox,
  };
}

export function sandboxPlan(s: Settings): RowPlan {
  const row = (
    id: string,
    figure: string,
    pick: (r: NonNullable<ChildResult['sandbox']>) => number,
    ms = false,
  ): RowSpec => ({
    id,
    figure,
    group: 'sandbox',
    unit: ms ? 'ms' : 'jobs/s',
    better: ms ? 'lower' : 'higher',
    measurement: 'sandbox',
    pick: (r) => (r.sandbox ? pick(r.sandbox) : undefined),
    digits: ms ? 1 : 0,
    libs: LIBS,
  });
  return {
    measurements: [
      {
        id: 'sandbox',
        kind: 'sandbox',
        procs: 1,
        server: 'main',
        params: { ...baseParams(s), concurrency: POOL, samples: s.firstSamples },
        libs: LIBS,
        timeoutMs: Math.max(s.timeoutMs, 180_000),
      },
    ],
    rows: [
      row(
        'sandboxInProcess',
        `sandbox: tiny jobs, c=${POOL}, handler in-process`,
        (r) => r.inProcessPerSec,
      ),
      row(
        'sandboxThread',
        `sandbox: tiny jobs, c=${POOL}, pool of ${POOL} threads`,
        (r) => r.threadPerSec,
      ),
      row(
        'sandboxProcess',
        `sandbox: tiny jobs, c=${POOL}, pool of ${POOL} processes`,
        (r) => r.processPerSec,
      ),
      row(
        'sandboxThreadStartMs',
        `sandbox: start-up of a pool of ${POOL} threads (4 jobs of ${HOLD_MS} ms waiting, less ${HOLD_MS} ms)`,
        (r) => r.threadStartMs,
        true,
      ),
      row(
        'sandboxProcessStartMs',
        `sandbox: start-up of a pool of ${POOL} processes (4 jobs of ${HOLD_MS} ms waiting, less ${HOLD_MS} ms)`,
        (r) => r.processStartMs,
        true,
      ),
    ],
  };
}
