/**
 * The `process` measurement of a benchmark child (see protocol.ts): jobs/s of one worker
 * process over pre-added jobs, and Redis commands / round trips per job; with `procs` > 1,
 * one of several coordinated worker processes (IPC with run.ts, see children.ts).
 */
import { Redis } from 'ioredis';
import { addInChunks, completionCounter, onError, payloads, QUEUE } from './jobs.js';
import type { Adapter, ConsumeOptions } from './libs/types.js';
import type { ChildParams, ChildResult, ParentMessage, ChildMessage } from './protocol.js';
import { callDeltas, commandCalls, infoNumber, wallMs, warmUp } from './util.js';

function handlerFor(p: ChildParams): ConsumeOptions['handler'] {
  const every = p.failEvery;
  return async (data, firstAttempt) => {
    if (every > 0 && firstAttempt && data.i % every === 0) throw new Error('planned failure');
  };
}

/**
 * Fill a queue with `warmup` jobs and process them all with one worker (untimed); again, with
 * the worker running, until `warmupMs` have passed.
 */
async function warmProcess(adapter: Adapter, p: ChildParams, queue: string): Promise<void> {
  const count = Math.max(1, p.warmup);
  const make = payloads(p.payloadBytes);
  const producer = await adapter.producer(queue);
  await producer.ready();
  let c = completionCounter(count);
  let consumer: Awaited<ReturnType<Adapter['consumer']>> | undefined;
  await warmUp(p.warmupMs, async (k) => {
    if (k > 0) c = completionCounter(count);
    await addInChunks(producer, k * count, count, p.bulkSize, make);
    consumer ??= await adapter.consumer(queue, {
      concurrency: p.concurrency,
      handler: handlerFor(p),
      onCompleted: () => c.onCompleted(),
      onFailed: () => c.onFailed(),
      onError,
    });
    await c.done;
  });
  await producer.close();
  await consumer?.close();
}

interface StatsSnapshot {
  calls: Map<string, number>;
  reads: number;
}

async function snapshot(stats: Redis): Promise<StatsSnapshot> {
  const calls = await commandCalls(stats);
  const reads = await infoNumber(stats, 'stats', 'total_reads_processed');
  return { calls, reads };
}

/** IPC with the orchestrator (multi-process runs). */
function parentChannel() {
  const waiters = new Map<ParentMessage['type'], () => void>();
  const seen = new Set<ParentMessage['type']>();
  process.on('message', (m: ParentMessage) => {
    seen.add(m.type);
    waiters.get(m.type)?.();
  });
  return {
    send(m: ChildMessage) {
      process.send?.(m);
    },
    wait(type: ParentMessage['type']): Promise<void> {
      if (seen.has(type)) return Promise.resolve();
      return new Promise((r) => waiters.set(type, r));
    },
  };
}

export async function measureProcess(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const multi = p.procs > 1;
  const parent = multi ? parentChannel() : undefined;
  const stats = new Redis({ host: p.host, port: p.port });
  try {
    await warmProcess(adapter, p, `${QUEUE}-warm-${p.index}`);
    if (p.index === 0) {
      const producer = await adapter.producer(QUEUE);
      await producer.ready();
      await addInChunks(producer, 0, p.n, p.bulkSize, payloads(p.payloadBytes));
      await producer.close();
    }
    if (parent) {
      parent.send({ type: 'ready' });
      await parent.wait('go');
    }
    const before = multi ? undefined : await snapshot(stats);
    const c = completionCounter(multi ? Number.POSITIVE_INFINITY : p.n);
    const handler = handlerFor(p);
    let firstAt = 0;
    const startAt = wallMs();
    const consumer = await adapter.consumer(QUEUE, {
      concurrency: p.concurrency,
      handler: (data, firstAttempt) => {
        if (firstAt === 0) firstAt = wallMs();
        return handler(data, firstAttempt);
      },
      onCompleted: c.onCompleted,
      onFailed: c.onFailed,
      onError,
    });
    let reported = 0;
    const ticker = parent
      ? setInterval(() => {
          if (c.completed !== reported) {
            reported = c.completed;
            parent.send({ type: 'count', completed: reported });
          }
        }, 20)
      : undefined;
    await (parent ? parent.wait('stop') : c.done);
    clearInterval(ticker);
    const after = before ? await snapshot(stats) : undefined;
    await consumer.close();

    // Steady state: from the first job handed to a handler to the last completion. Worker
    // start-up (connections, registration, a heartbeat thread) is excluded for every library
    // and reported on its own as firstJobMs.
    const seconds = (c.lastAt - firstAt) / 1000;
    const result: ChildResult = {
      ok: true,
      lib: adapter.lib,
      kind: 'process',
      value: c.completed / seconds,
      jobs: c.completed,
      seconds,
      startAt: firstAt,
      lastAt: c.lastAt,
      firstJobMs: firstAt - startAt,
      failedAttempts: c.failed,
    };
    if (before && after) {
      const deltas = callDeltas(before.calls, after.calls);
      // The snapshot itself: the first snapshot's 2 INFO calls land in the second one's count.
      deltas.set('info', (deltas.get('info') ?? 0) - 2);
      let total = 0;
      for (const v of deltas.values()) total += v;
      result.commandsPerJob = total / c.completed;
      // total_reads_processed counts the reading INFO itself: 2 of the second snapshot.
      result.readsPerJob = (after.reads - before.reads - 2) / c.completed;
      result.commandMix = Object.fromEntries(
        [...deltas]
          .filter(([, v]) => v > 0)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 12)
          .map(([k, v]) => [k, Math.round((v / c.completed) * 1000) / 1000]),
      );
    }
    return result;
  } finally {
    stats.disconnect();
  }
}
