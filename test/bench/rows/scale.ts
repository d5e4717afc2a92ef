/**
 * Rows "scale" (behind --scale): `n` jobs added with addBulk (jobs/s), Redis used_memory per
 * waiting job, then all taken and completed with the library's direct lease/complete call
 * (`drain`: ours `lease` + `completeAndLease`, `bulkSize` per call, one call at a time;
 * jobs/s). Run at the big N (default 1 000 000) and at 20 000 to compare. Only libraries with
 * a `drain` (ours, the fused floor) take part.
 */
import { addInChunks, payloads, QUEUE } from '../jobs.js';
import type { Adapter } from '../libs/types.js';
import type { ChildParams, ChildResult } from '../protocol.js';
import type { LibName } from '../libs/types.js';
import type { Settings } from '../options.js';
import { baseParams, type Measurement, type RowPlan, type RowSpec } from '../row.js';
import { info, sleep } from '../util.js';
import { Redis } from 'ioredis';

async function usedMemory(stats: Redis): Promise<number> {
  await sleep(250); // let Redis shrink client buffers in its cron
  return Number((await info(stats, 'memory')).get('used_memory'));
}

export async function measureScale(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const drain = adapter.drain?.bind(adapter);
  if (!drain) throw new Error(`${adapter.lib} has no direct lease/complete call (drain)`);
  const make = payloads(p.payloadBytes);
  const batch = Math.min(p.bulkSize, 10_000);
  const stats = new Redis({ host: p.host, port: p.port });
  try {
    // Warm-up on another queue: JIT, and the scripts loaded (their cache is in used_memory).
    const warm = await adapter.producer(`${QUEUE}-warm`);
    await warm.ready();
    await addInChunks(warm, 0, Math.max(1, p.warmup), p.bulkSize, make);
    await warm.close();
    await drain(`${QUEUE}-warm`, batch);

    const producer = await adapter.producer(QUEUE);
    await producer.ready();
    const before = await usedMemory(stats);
    const t0 = performance.now();
    await addInChunks(producer, 0, p.n, p.bulkSize, make);
    const addSeconds = (performance.now() - t0) / 1000;
    await producer.close();
    const after = await usedMemory(stats);

    const t1 = performance.now();
    const drained = await drain(QUEUE, batch);
    const drainSeconds = (performance.now() - t1) / 1000;
    if (drained !== p.n) throw new Error(`drained ${drained} of ${p.n} jobs`);
    return {
      ok: true,
      lib: adapter.lib,
      kind: 'scale',
      value: p.n / drainSeconds,
      jobs: p.n,
      seconds: addSeconds + drainSeconds,
      addPerSec: p.n / addSeconds,
      drainPerSec: p.n / drainSeconds,
      bytesPerJob: (after - before) / p.n,
    };
  } finally {
    stats.disconnect();
  }
}

/** The libraries with a `drain` (see libs/ours.ts, libs/fused.ts). */
const DRAINING: readonly LibName[] = ['ours', 'fused'];

const count = (n: number) => n.toLocaleString('en-US');

export function scalePlan(s: Settings): RowPlan {
  const sizes = [
    { id: 'Base', n: s.scaleBase },
    { id: 'Big', n: s.scaleN },
  ];
  const measurements: Measurement[] = sizes.map(({ id, n }) => ({
    id: `scale${id}`,
    kind: 'scale',
    procs: 1,
    server: 'main',
    params: { ...baseParams(s), n, warmup: Math.min(1000, n) },
    libs: DRAINING,
    timeoutMs: Math.max(s.timeoutMs, Math.round(120 + n / 2000) * 1000),
  }));
  const row = (
    what: string,
    figure: (n: string) => string,
    extra: Pick<RowSpec, 'unit' | 'better' | 'pick' | 'digits'>,
  ): RowSpec[] =>
    sizes.map(({ id, n }) => ({
      id: `scale${what}${id}`,
      figure: figure(count(n)),
      group: 'scale',
      measurement: `scale${id}`,
      libs: DRAINING,
      ...extra,
    }));
  const jobsPerSec = { unit: 'jobs/s', better: 'higher', digits: 0 } as const;
  return {
    measurements,
    rows: [
      ...row('Add', (n) => `scale: addBulk of ${n} jobs (${s.bulkSize} per call)`, {
        ...jobsPerSec,
        pick: (r) => r.addPerSec,
      }),
      ...row('Take', (n) => `scale: lease+complete ${n} jobs (${s.bulkSize} per call)`, {
        ...jobsPerSec,
        pick: (r) => r.drainPerSec,
      }),
      ...row('Bytes', (n) => `scale: Redis bytes per waiting job, ${n} waiting`, {
        unit: 'B',
        better: 'lower',
        digits: 1,
        pick: (r) => r.bytesPerJob,
      }),
    ],
  };
}
