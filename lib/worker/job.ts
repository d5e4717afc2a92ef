// The job handle a handler receives (`Job`, declared in lib/types/job.ts): its data, times,
// signal, progress, extend, log, updateData and rateLimited, and a flow job's parent and children.
import { inspect } from 'node:util';
import { rateLimited } from '../errors.js';
import { decode, type Raw } from '../job/codec.js';
import { RAW_DATA, type WithRaw } from '../job/records.js';
import { addLine, logLine, splitLogs, type LogBatch } from '../job/logs.js';
import type { Job, ParentRef } from '../types/job.js';
import type { WorkerContext } from './context.js';
import type { Run } from './parts.js';

/**
 * The handle for a run's handler. One class, so every job shares one shape: its fields as own
 * fields (its data behind a getter: see RunJob.releaseData), `progress`, `extend`, `log`,
 * `updateData` and `rateLimited` as own functions (a handler may pass them around unbound),
 * `signal` a getter of the class, creating the AbortController on first read (most handlers never
 * read it). Progress, extend and updateData of a handed-off job wait until its lease is adopted
 * (ours).
 */
class RunJob<T, R> implements Job<T> {
  readonly id: string;
  readonly name: string | undefined;
  readonly priority: number;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly queueName: string;
  readonly traceContext: string | undefined;
  readonly addedAt: number;
  readonly startedAt: number;
  readonly group: string | undefined;
  readonly parent: ParentRef | undefined;
  readonly #ctx: WorkerContext<T, R>;
  readonly #run: Run<T>;
  /** Its data; undefined once let go (#released, see RunJob.releaseData). */
  #data: T;
  /** Its payload as stored, while the data may be let go and decoded again from it. */
  #raw: Raw | undefined;
  #released = false;

  constructor(ctx: WorkerContext<T, R>, run: Run<T>) {
    const lease = run.lease;
    this.id = lease.id;
    this.#data = lease.data;
    // (Held here from now on, not by the lease too; 'buffer' decodes to the stored Buffer itself:
    // nothing to let go.)
    const raw = (lease as WithRaw)[RAW_DATA];
    if (raw !== undefined) (lease as { [RAW_DATA]?: Raw })[RAW_DATA] = undefined;
    this.#raw = ctx.queue.options.codec === 'buffer' ? undefined : raw;
    this.name = lease.name;
    this.priority = lease.priority;
    this.attempt = lease.attempt;
    this.maxAttempts = lease.maxAttempts;
    this.queueName = ctx.queue.name;
    this.traceContext = lease.traceContext;
    this.addedAt = lease.addedAt;
    this.startedAt = lease.startedAt;
    this.group = lease.group;
    this.parent = lease.parent;
    this.#ctx = ctx;
    this.#run = run;
  }

  /** Its data (replaced by `updateData` once stored). */
  get data(): T {
    if (this.#released) {
      this.#released = false;
      this.#data = decode<T>(this.#ctx.queue.options, this.#raw!);
      this.#raw = undefined;
    }
    return this.#data;
  }

  set data(data: T) {
    this.#data = data;
    this.#raw = undefined;
    this.#released = false;
  }

  /**
   * `job`'s run ended well: let its data go until it is read again (decoded anew from the
   * payload, a Buffer outside the V8 heap). Its outcome waits about a round trip for Redis, and
   * data held that long outlives young-generation collections: moving it to the old space was
   * most of a worker's GC time with 10 KB payloads (docs/performance.md, "What limits us").
   * (Static: not a method of the job, which sandboxes would forward.)
   */
  static releaseData(job: RunJob<unknown, unknown>): boolean {
    if (job.#raw === undefined || job.#released) return false;
    job.#data = undefined;
    job.#released = true;
    return true;
  }

  /** Its fields with its data (a getter: not an own property), as JSON and for console.log. */
  toJSON(): object {
    return { ...this, data: this.data };
  }

  [inspect.custom](): object {
    return this.toJSON();
  }

  get signal(): AbortSignal {
    return this.#ctx.runs.signal(this.#run);
  }

  get finishedAt(): number | undefined {
    return this.#run.finishedAt;
  }

  // The functions below are made on first read (most handlers use none of them: a no-op job then
  // costs no closures) and kept as the job's own, so a handler may pass them around unbound.
  get progress(): (value: unknown) => Promise<boolean> {
    return this.#own('progress', async (value: unknown) => {
      // A run that ended (completed, failed, lost, given back at close) holds no lease: false,
      // without a call (after a close, its connection may be gone).
      if (this.#run.ended) return false;
      const { handoffs, queue } = this.#ctx;
      const lease = this.#run.lease;
      return this.#lost((await handoffs.adopted(lease)) && (await queue.progress(lease, value)));
    });
  }

  get extend(): (ms?: number) => Promise<boolean> {
    return this.#own('extend', async (ms: number = this.#ctx.settings.leaseMs) => {
      if (this.#run.ended) return false; // (as progress)
      const { handoffs, queue } = this.#ctx;
      const lease = this.#run.lease;
      return this.#lost((await handoffs.adopted(lease)) && (await queue.extend(lease, ms))[0]!);
    });
  }

  get log(): (message: unknown) => Promise<boolean> {
    return this.#own('log', (message: unknown) => {
      const run = this.#run;
      const max = this.#ctx.queue.options.maxLogLines;
      // A run that ended (its lease lost, or its outcome on its way with its lines) logs nothing.
      if (run.ended) return Promise.resolve(false);
      if (max === 0) return Promise.resolve(true);
      addLine((run.logs ??= { lines: [], dropped: 0 }), logLine(message), max);
      return Promise.resolve(true);
    });
  }

  get updateData(): (data: T) => Promise<boolean> {
    return this.#own('updateData', async (data: T) => {
      if (this.#run.ended) return false; // (as progress)
      const { handoffs, queue } = this.#ctx;
      const lease = this.#run.lease;
      const ok = this.#lost(
        (await handoffs.adopted(lease)) && (await queue.updateLeasedData(lease, data)),
      );
      if (ok) this.data = data;
      return ok;
    });
  }

  get rateLimited(): (ms: number) => never {
    return this.#own('rateLimited', rateLimited);
  }

  get getChildrenResults(): <C = unknown>() => Promise<Record<string, C>> {
    return this.#own(
      'getChildrenResults',
      async <C = unknown>(): Promise<Record<string, C>> =>
        (await this.#ctx.queue.childrenOf(this.#run.lease.seq, 'results')) as Record<string, C>,
    );
  }

  get getChildrenFailures(): () => Promise<Record<string, string>> {
    return this.#own(
      'getChildrenFailures',
      async (): Promise<Record<string, string>> =>
        (await this.#ctx.queue.childrenOf(this.#run.lease.seq, 'failures')) as Record<
          string,
          string
        >,
    );
  }

  /** `fn` as this job's own `name` from now on (see above). */
  #own<F>(name: string, fn: F): F {
    // (Configurable: a Proxy over the job — the Nest layer's, telling 'progress' — may still
    // answer another function for it.)
    Object.defineProperty(this, name, { value: fn, enumerable: true, configurable: true });
    return fn;
  }

  #lost(ok: boolean): boolean {
    if (!ok) this.#ctx.runs.end(this.#run, { kind: 'lost', reason: 'lease lost' });
    return ok;
  }
}

/** The job handle of `run` (see RunJob). */
export function createJob<T, R>(ctx: WorkerContext<T, R>, run: Run<T>): Job<T> {
  return new RunJob(ctx, run);
}

/** `run` succeeded: its data goes until read again (RunJob.releaseData); its lease's with it. */
export function releaseData<T>(run: Run<T>): void {
  if (run.job instanceof RunJob && RunJob.releaseData(run.job))
    (run.lease as { data: unknown }).data = undefined;
}

/**
 * The log lines of `run` not sent yet (taken: the caller sends them); with a `budget` (units,
 * see splitLogs), the first that fit it, the rest left for later.
 */
export function takeLogs<T>(run: Run<T>, budget = Infinity): LogBatch | undefined {
  const logs = run.logs;
  if (logs === undefined) return undefined;
  const [taken, rest] = budget === Infinity ? [logs, undefined] : splitLogs(logs, budget);
  run.logs = rest;
  return taken;
}
