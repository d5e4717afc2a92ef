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
