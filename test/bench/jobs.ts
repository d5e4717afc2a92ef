/** What the benchmark children share: the adapters, payloads, filling a queue, counting. */
import type { Adapter, JobData, LibName, Producer } from './libs/types.js';
import type { ChildParams } from './protocol.js';
import { errorText, wallMs } from './util.js';

export const QUEUE = 'bench';

export async function loadAdapter(lib: LibName, p: ChildParams): Promise<Adapter> {
  const config = {
    host: p.host,
    port: p.port,
    retries: p.failEvery > 0,
    keepCompleted: p.keepCompleted === true,
  };
  switch (lib) {
    case 'ours':
      return (await import('./libs/ours.js')).create(config);
    case 'bullmq':
      return (await import('./libs/bullmq.js')).create(config);
    case 'bee':
      return (await import('./libs/bee.js')).create(config);
    case 'bare':
      return (await import('./libs/bare.js')).create(config);
    case 'fused':
      return (await import('./libs/fused.js')).create(config);
  }
}

/** Payload maker: `{"i":n}`, or padded to about `bytes` bytes of JSON. */
export function payloads(bytes: number): (i: number) => JobData {
  if (bytes <= 0) return (i) => ({ i });
  const pad = 'x'.repeat(Math.max(0, bytes - JSON.stringify({ i: 10_000, pad: '' }).length));
  return (i) => ({ i, pad });
}

export async function addInChunks(
  producer: Producer,
  from: number,
  count: number,
  chunk: number,
  make: (i: number) => JobData,
): Promise<void> {
  for (let start = from; start < from + count; start += chunk) {
    const end = Math.min(from + count, start + chunk);
    const batch: JobData[] = [];
    for (let i = start; i < end; i++) batch.push(make(i));
    await producer.addBulk(batch);
  }
}

/** Counts completions; `done` resolves at the target-th one. */
export function completionCounter(target: number) {
  let resolve!: () => void;
  const done = new Promise<void>((r) => (resolve = r));
  const c = {
    completed: 0,
    failed: 0,
    lastAt: 0,
    done,
    onCompleted: () => {
      c.completed += 1;
      c.lastAt = wallMs();
      if (c.completed === target) resolve();
    },
    onFailed: () => {
      c.failed += 1;
    },
  };
  return c;
}

export const onError = (e: unknown) =>
  process.stderr.write(`[child] library error: ${errorText(e)}\n`);
