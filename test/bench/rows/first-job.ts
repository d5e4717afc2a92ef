/**
 * Row "first job": ms from starting a worker (ours and BullMQ: `new Worker(...)`; Bee-Queue:
 * `new Queue(...)` + `queue.process(...)`; the floors: their connections + first take) with
 * one job already waiting on its queue, to its handler being called. Connecting is included
 * for every library: each adapter's `consumer()` opens its own connections. One untimed
 * sample first (module and script loading), then `samples` samples, each on a fresh queue;
 * the figure is their median.
 */
import { onError, payloads, QUEUE } from '../jobs.js';
import type { Adapter } from '../libs/types.js';
import type { ChildParams, ChildResult } from '../protocol.js';
import type { Settings } from '../options.js';
import { baseParams, type RowPlan } from '../row.js';
import { median } from '../util.js';

async function sample(adapter: Adapter, queue: string): Promise<number> {
  const producer = await adapter.producer(queue);
  await producer.ready();
  await producer.add(payloads(0)(0));
  await producer.close();
  let called!: (at: number) => void;
  const handled = new Promise<number>((r) => (called = r));
  let completed!: () => void;
  const done = new Promise<void>((r) => (completed = r));
  const t0 = performance.now();
  const consumer = await adapter.consumer(queue, {
    concurrency: 1,
    handler: () => called(performance.now()),
    onCompleted: () => completed(),
    onError,
  });
  const t1 = await handled;
  await done;
  await consumer.close();
  return t1 - t0;
}

export async function measureFirstJob(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const samples = Math.max(1, p.samples);
  await sample(adapter, `${QUEUE}-first-warm`);
  const ms: number[] = [];
  for (let i = 0; i < samples; i++) ms.push(await sample(adapter, `${QUEUE}-first-${i}`));
  return {
    ok: true,
    lib: adapter.lib,
    kind: 'firstJob',
    value: median(ms),
    jobs: samples,
    samplesMs: ms.map((x) => Math.round(x * 100) / 100),
  };
}

export function firstJobPlan(s: Settings): RowPlan {
  return {
    measurements: [
      {
        id: 'firstJob',
        kind: 'firstJob',
        procs: 1,
        server: 'main',
        params: { ...baseParams(s), concurrency: 1, samples: s.firstSamples },
      },
    ],
    rows: [
      {
        id: 'firstJobMs',
        figure: `worker start → first handler call, 1 job waiting (median of ${s.firstSamples})`,
        group: 'firstJob',
        unit: 'ms',
        better: 'lower',
        measurement: 'firstJob',
        pick: (r) => r.value,
        digits: 1,
      },
    ],
  };
}
