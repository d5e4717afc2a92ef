/**
 * Rows "memory per worker": in a fresh child (run with --expose-gc), start `workers` workers
 * at `concurrency` (5), each on its own queue holding one job, and report
 * - the ms from the first start call until every worker has run its job (start-up, connecting
 *   and registering included), and
 * - the RSS (and V8 heap) growth over the baseline: the same process with the library loaded
 *   and one producer used and closed, before any worker; read after the workers sit idle for
 *   a while, each reading after a full GC when `gc` is exposed.
 */
import { completionCounter, onError, payloads, QUEUE } from '../jobs.js';
import type { Adapter, Consumer } from '../libs/types.js';
import type { ChildParams, ChildResult } from '../protocol.js';
import type { Settings } from '../options.js';
import { baseParams, type RowPlan, type RowSpec } from '../row.js';
import { sleep } from '../util.js';

const gc = (globalThis as { gc?: () => void }).gc;

async function settled(): Promise<{ rss: number; heap: number }> {
  for (let i = 0; i < 3; i++) {
    gc?.();
    await sleep(50);
  }
  const m = process.memoryUsage();
  return { rss: m.rss, heap: m.heapUsed };
}

export async function measureMemory(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const workers = Math.max(1, p.workers ?? 1);
  const queue = (i: number) => `${QUEUE}-mem-${i}`;
  const make = payloads(0);
  for (let i = 0; i < workers; i++) {
    const producer = await adapter.producer(queue(i));
    await producer.ready();
    await producer.add(make(i));
    await producer.close();
  }
  await sleep(200);
  const before = await settled();

  let called = 0;
  let allCalled!: () => void;
  const started = new Promise<void>((r) => (allCalled = r));
  const c = completionCounter(workers);
  const consumers: Consumer[] = [];
  const t0 = performance.now();
  for (let i = 0; i < workers; i++) {
    consumers.push(
      await adapter.consumer(queue(i), {
        concurrency: p.concurrency,
        handler: () => {
          if (++called === workers) allCalled();
        },
        onCompleted: c.onCompleted,
        onError,
      }),
    );
  }
  await started;
  const startMs = performance.now() - t0;
  await c.done;
  await sleep(1000); // idle: buffers settle, timers and heartbeats run
  const after = await settled();
  await Promise.all(consumers.map((x) => x.close()));
  return {
    ok: true,
    lib: adapter.lib,
    kind: 'memory',
    value: after.rss - before.rss,
    jobs: workers,
    startMs,
    rssDeltaBytes: after.rss - before.rss,
    heapDeltaBytes: after.heap - before.heap,
    gc: gc !== undefined,
  };
}

export const MEMORY_CONCURRENCY = 5;

export function memoryPlan(s: Settings): RowPlan {
  const counts = [...new Set(s.memWorkers)].sort((a, b) => a - b);
  const rss: RowSpec[] = counts.map((w) => ({
    id: `memRss${w}`,
    figure: `RSS growth, ${w} idle worker(s) (c=${MEMORY_CONCURRENCY}), each on its own queue`,
    group: 'memory',
    unit: 'MB',
    better: 'lower',
    measurement: `mem${w}`,
    pick: (r) => (r.rssDeltaBytes === undefined ? undefined : r.rssDeltaBytes / 2 ** 20),
    digits: 1,
  }));
  const start: RowSpec[] = counts.map((w) => ({
    id: `memStart${w}`,
    figure: `start-up until ${w} worker(s) each ran a first job`,
    group: 'memory',
    unit: 'ms',
    better: 'lower',
    measurement: `mem${w}`,
    pick: (r) => r.startMs,
    digits: 0,
  }));
  return {
    measurements: counts.map((w) => ({
      id: `mem${w}`,
      kind: 'memory',
      procs: 1,
      server: 'main',
      params: { ...baseParams(s), concurrency: MEMORY_CONCURRENCY, workers: w },
      nodeArgs: ['--expose-gc'],
    })),
    rows: [...rss, ...start],
  };
}
