/**
 * Row "concurrent add": `callers` (64) concurrent callers share ONE producer (queue object),
 * each awaiting its own add in a loop until `n` jobs are added in all. Jobs/s. What an HTTP
 * server adding a job per request sees; the floors are 64 concurrent LPUSHes / add scripts.
 */
import { payloads, QUEUE } from '../jobs.js';
import type { Adapter, Producer } from '../libs/types.js';
import type { ChildParams, ChildResult } from '../protocol.js';
import type { Settings } from '../options.js';
import { baseParams, throughputRow, type RowPlan } from '../row.js';
import { warmUp } from '../util.js';

export const DEFAULT_CALLERS = 64;

async function addConcurrently(
  producer: Producer,
  callers: number,
  from: number,
  count: number,
  make: (i: number) => { i: number },
): Promise<void> {
  let next = from;
  const end = from + count;
  const caller = async () => {
    while (next < end) await producer.add(make(next++));
  };
  await Promise.all(Array.from({ length: Math.min(callers, count) }, caller));
}

export async function measureAddConcurrent(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const callers = p.callers ?? DEFAULT_CALLERS;
  const make = payloads(p.payloadBytes);
  const producer = await adapter.producer(QUEUE);
  await producer.ready();
  const warm = Math.max(1, p.warmup);
  const rounds = await warmUp(p.warmupMs, (k) =>
    addConcurrently(producer, callers, k * warm, warm, make),
  );
  const t0 = performance.now();
  await addConcurrently(producer, callers, rounds * warm, p.n, make);
  const seconds = (performance.now() - t0) / 1000;
  await producer.close();
  return {
    ok: true,
    lib: adapter.lib,
    kind: 'addConcurrent',
    value: p.n / seconds,
    jobs: p.n,
    seconds,
  };
}

export function concurrentAddPlan(s: Settings): RowPlan {
  return {
    measurements: [
      {
        id: 'addConcurrent',
        kind: 'addConcurrent',
        procs: 1,
        server: 'main',
        params: { ...baseParams(s), callers: s.callers },
      },
    ],
    rows: [
      throughputRow(
        'addConcurrent',
        'addConcurrent',
        `add, ${s.callers} concurrent callers on one queue object`,
        'addConcurrent',
      ),
    ],
  };
}
