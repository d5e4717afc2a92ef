/**
 * Helpers for the Worker runtime tests (test/integration/worker/).
 */
import { afterEach } from '@jest/globals';
import type { Redis } from 'ioredis';
import { Worker } from '../../lib/index.js';
import { waitFor } from './wait.js';
import type { Handler, Job, WorkerEvents, WorkerOptions, WorkQueue } from '../../lib/index.js';

/**
 * `worker(q, handler, options)` for one test file: every worker it makes is closed (timeout 0)
 * after each test. `onError` listens to each worker's 'error' events.
 */
export function workersClosedAfterEach(onError?: (e: unknown) => void) {
  const workers: Worker<never, never>[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: 0 })));
  });
  return function worker<T, R>(
    q: WorkQueue<T, R>,
    h: Handler<T, R>,
    o: WorkerOptions = {},
  ): Worker<T, R> {
    const w = new Worker(q, h, o);
    workers.push(w as unknown as Worker<never, never>);
    if (onError) w.on('error', onError);
    return w;
  };
}

/** A promise with its resolve exposed, e.g. to hold a handler until the test lets it go. */
export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
  readonly settled: boolean;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (v: T) => void;
  let settled = false;
  const promise = new Promise<T>((r) => {
    resolve = (v) => {
      settled = true;
      r(v);
    };
  });
  return {
    promise,
    resolve,
    get settled() {
      return settled;
    },
  };
}

/** Every event a worker emits, in order, as `[name, ...args]`. */
export function recordEvents<T, R>(
  w: Worker<T, R>,
): Array<[keyof WorkerEvents<T, R>, ...unknown[]]> {
  const events: Array<[keyof WorkerEvents<T, R>, ...unknown[]]> = [];
  for (const name of ['completed', 'failed', 'retried', 'dead', 'leaseLost', 'error'] as const) {
    (w.on as (e: string, l: (...a: unknown[]) => void) => unknown)(name, (...args: unknown[]) => {
      events.push([name, ...args]);
    });
  }
  return events;
}

/** The `q`-quantile (0…1) of `values` (nearest rank). */
export function quantile(values: readonly number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/** Resolves `p`, or rejects after `ms` naming `what` (a deadline for calls that must not hang). */
export function deadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
    }),
  ]);
}

/** A handler whose runs each wait for their own gate; `runs` lists them in start order. */
export function gatedHandler<T>() {
  const runs: Array<{ job: Job<T>; gate: Deferred<string> }> = [];
  const handler: Handler<T, string> = async (job) => {
    const gate = deferred<string>();
    runs.push({ job, gate });
    return gate.promise;
  };
  return { runs, handler };
}

/** Wait until worker `workerId` is in the queue's parked set (an add now hands its job off). */
export async function waitParked(admin: Redis, q: WorkQueue, workerId: string): Promise<void> {
  await waitFor(async () => (await admin.zscore(q.keys.key('parked'), workerId)) !== null, {
    what: `worker ${workerId} parked`,
  });
}

/**
 * Whether worker `w`'s idle wait is blocked in Redis now: its BLMOVE, by CLIENT LIST (internals:
 * the wait's own connection). Redis serves blocked clients first come, first served, so tests
 * start workers one after the other, each once the one before is blocked, to fix who pops first.
 */
export async function idleWaitBlocked(admin: Redis, w: object): Promise<boolean> {
  const { ctx } = w as { ctx: { idle: { conn?: { stream: { localPort?: number } } } } };
  const port = ctx.idle.conn?.stream.localPort;
  if (port === undefined) return false;
  const clients = (await admin.client('LIST')) as string;
  return clients
    .split('\n')
    .some((c) => c.includes(`:${port} `) && /flags=\S*b.* cmd=blmove/.test(c));
}
