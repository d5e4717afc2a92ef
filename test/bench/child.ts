/**
 * ONE benchmark measurement, in a fresh process (started by test/bench/run.ts):
 *
 *   node --import ./scripts/register-ts.mjs test/bench/child.ts <lib> <kind> '<params json>'
 *
 * Prints exactly one JSON line on stdout (a ChildResult, or a ChildFailure with exit code 1).
 * Every kind but memory first runs a short untimed warm-up of the same code path (JIT).
 * Multi-process `process` runs also talk to the orchestrator over IPC (ready / count; go / stop).
 */
import { Redis } from 'ioredis';
import { addInChunks, loadAdapter, onError, payloads, QUEUE } from './jobs.js';
import type { Adapter, LibName } from './libs/types.js';
import { LIBS } from './libs/types.js';
import { measureProcess } from './process.js';
import {
  CHILD_KINDS,
  type ChildFailure,
  type ChildKind,
  type ChildParams,
  type ChildResult,
} from './protocol.js';
import { measureAddConcurrent } from './rows/concurrent-add.js';
import { measureFlows } from './rows/flows.js';
import { measureFirstJob } from './rows/first-job.js';
import { measureMemory } from './rows/memory.js';
import { measureSandbox } from './rows/sandbox.js';
import { measureScale } from './rows/scale.js';
import { measureFairness, measureGroups } from './rows/groups.js';
import { errorText, info, quantile, sleep, warmUp } from './util.js';

async function measureAdd(adapter: Adapter, p: ChildParams, bulk: boolean): Promise<ChildResult> {
  const make = payloads(p.payloadBytes);
  const producer = await adapter.producer(QUEUE);
  await producer.ready();
  const run = async (from: number, count: number) => {
    if (bulk) await addInChunks(producer, from, count, p.bulkSize, make);
    else for (let i = from; i < from + count; i++) await producer.add(make(i));
  };
  const rounds = await warmUp(p.warmupMs, (k) => run(k * p.warmup, p.warmup));
  const t0 = performance.now();
  await run(rounds * p.warmup, p.n);
  const seconds = (performance.now() - t0) / 1000;
  await producer.close();
  return {
    ok: true,
    lib: adapter.lib,
    kind: bulk ? 'addBulk' : 'add',
    value: p.n / seconds,
    jobs: p.n,
    seconds,
  };
}

async function measureLatency(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const make = payloads(p.payloadBytes);
  const producer = await adapter.producer(QUEUE);
  await producer.ready();
  let started: (() => void) | undefined;
  let completed: (() => void) | undefined;
  let t1 = 0;
  const consumer = await adapter.consumer(QUEUE, {
    concurrency: 1,
    handler: () => {
      t1 = performance.now();
      started?.();
    },
    onCompleted: () => completed?.(),
    onError,
  });
  // A first job proves the worker is up (its connections open, its loop running).
  const lat: number[] = [];
  const total = p.warmup + p.samples;
  for (let s = -1; s < total; s++) {
    const isStarted = new Promise<void>((r) => (started = r));
    const isCompleted = new Promise<void>((r) => (completed = r));
    const t0 = performance.now();
    await producer.add(make(s + 1));
    await isStarted;
    const us = (t1 - t0) * 1000;
    await isCompleted;
    if (s >= p.warmup) lat.push(us);
    await sleep(s < 0 ? 200 : p.spacingMs);
  }
  await consumer.close();
  await producer.close();
  lat.sort((a, b) => a - b);
  const p50 = quantile(lat, 0.5);
  return {
    ok: true,
    lib: adapter.lib,
    kind: 'latency',
    value: p50,
    jobs: lat.length,
    p50Us: p50,
    p99Us: quantile(lat, 0.99),
    meanUs: lat.reduce((a, b) => a + b, 0) / lat.length,
    maxUs: lat[lat.length - 1],
  };
}

async function measureBytes(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const make = payloads(p.payloadBytes);
  const stats = new Redis({ host: p.host, port: p.port });
  try {
    // Warm-up on another queue: loads the scripts (their cache counts in used_memory).
    const warm = await adapter.producer(`${QUEUE}-warm`);
    await warm.ready();
    await addInChunks(warm, 0, Math.max(1, p.warmup), p.bulkSize, make);
    await warm.close();
    const producer = await adapter.producer(QUEUE);
    await producer.ready();
    const memory = async () => {
      await sleep(250); // let Redis shrink client buffers in its cron
      const m = await info(stats, 'memory');
      const used = Number(m.get('used_memory'));
      const clients = Number(m.get('mem_clients_normal') ?? 0);
      return { used, dataset: used - clients };
    };
    const before = await memory();
    await addInChunks(producer, 0, p.n, p.bulkSize, make);
    const after = await memory();
    await producer.close();
    return {
      ok: true,
      lib: adapter.lib,
      kind: 'bytes',
      value: (after.used - before.used) / p.n,
      jobs: p.n,
      datasetBytesPerJob: (after.dataset - before.dataset) / p.n,
    };
  } finally {
    stats.disconnect();
  }
}

async function main(): Promise<ChildResult> {
  const [lib, kind, json] = process.argv.slice(2);
  if (!LIBS.includes(lib as LibName) || !CHILD_KINDS.includes(kind as ChildKind) || !json) {
    throw new Error(
      `usage: child.ts <${LIBS.join('|')}> <${CHILD_KINDS.join('|')}> '<params json>'`,
    );
  }
  const p = JSON.parse(json) as ChildParams;
  const adapter = await loadAdapter(lib as LibName, p);
  switch (kind as ChildKind) {
    case 'add':
      return measureAdd(adapter, p, false);
    case 'addBulk':
      return measureAdd(adapter, p, true);
    case 'process':
      return measureProcess(adapter, p);
    case 'latency':
      return measureLatency(adapter, p);
    case 'bytes':
      return measureBytes(adapter, p);
    case 'addConcurrent':
      return measureAddConcurrent(adapter, p);
    case 'firstJob':
      return measureFirstJob(adapter, p);
    case 'memory':
      return measureMemory(adapter, p);
    case 'scale':
      return measureScale(adapter, p);
    case 'sandbox':
      return measureSandbox(adapter, p);
    case 'groups':
      return measureGroups(adapter, p);
    case 'fairness':
      return measureFairness(adapter, p);
    case 'flows':
      return measureFlows(adapter, p);
  }
}

function finish(line: ChildResult | ChildFailure, code: number): void {
  process.stdout.write(`${JSON.stringify(line)}\n`, () => process.exit(code));
}

const timeoutMs = (() => {
  try {
    return (JSON.parse(process.argv[4] ?? '{}') as Partial<ChildParams>).timeoutMs ?? 300_000;
  } catch {
    return 300_000;
  }
})();
setTimeout(() => {
  finish(
    {
      ok: false,
      lib: process.argv[2] ?? '?',
      kind: process.argv[3] ?? '?',
      error: `timed out after ${timeoutMs} ms`,
    },
    1,
  );
}, timeoutMs).unref();

main().then(
  (result) => finish(result, 0),
  (e: unknown) =>
    finish(
      { ok: false, lib: process.argv[2] ?? '?', kind: process.argv[3] ?? '?', error: errorText(e) },
      1,
    ),
);
