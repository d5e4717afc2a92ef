// The runner: calls the handler of each run the run table starts, enforces `jobTimeoutMs`, and
// tells how the run ended (a complete batched into the next lease call, or a fail) and events.
import { delayOf, errorMessage, RateLimitError, rateLimitMs, WorkQueueError } from '../errors.js';
import { encodeResult } from '../job/codec.js';
import { runRunHooks } from './run-hooks.js';
import type { FailOptions, FailOutcome } from '../types/index.js';
import { backoffDelayFor } from './backoff.js';
import { releaseData, takeLogs } from './job.js';
import type { WorkerContext } from './context.js';
import type { Run, RunOutcome, RunnerPart } from './parts.js';
import type { Job, LeasedJob } from '../types/job.js';

const NO_LEASES: readonly LeasedJob<never>[] = [];

const RESOLVED = Promise.resolve();

export class Runner<T, R> implements RunnerPart<T, R> {
  /**
   * Runs whose handler returned a plain value (see execute), and the values: they end together,
   * in one microtask.
   */
  private returnedRuns: Array<Run<T>> = [];
  private returnedValues: R[] = [];

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  /** Call the handler of a run just started (a slot is taken). */
  execute(run: Run<T>): void {
    const { jobTimeoutMs } = this.ctx.settings;
    if (jobTimeoutMs !== undefined) {
      run.timer = setTimeout(() => void this.timeOut(run, jobTimeoutMs), jobTimeoutMs);
    }
    // A promise chain, not an async function: per job, the least the runtime allocates.
    const startedAt = performance.now();
    let out: R | Promise<R>;
    try {
      const hooks = this.ctx.runHooks;
      out =
        hooks.length === 0
          ? this.ctx.handler(run.job)
          : runRunHooks(hooks, run.job as Job<unknown>, async () => this.ctx.handler(run.job));
    } catch (error) {
      out = Promise.reject(error);
    }
    if (out === null || (typeof out !== 'object' && typeof out !== 'function')) {
      // A plain value (only an object can be a promise or a thenable): the run ends in a
      // microtask, as through `Promise.resolve(out).then`, but with the others that returned
      // at once (no promise, reaction nor closures per job).
      this.ctx.loop.sampleJob(performance.now() - startedAt);
      // (Not queueMicrotask: Node makes an AsyncResource for each, costlier than a promise.)
      if (this.returnedRuns.push(run) === 1) void RESOLVED.then(this.endReturned);
      this.returnedValues.push(out);
      return;
    }
    Promise.resolve(out).then(
      (result) => {
        this.ctx.loop.sampleJob(performance.now() - startedAt);
        this.succeeded(run, result);
      },
      (error: unknown) => {
        this.ctx.loop.sampleJob(performance.now() - startedAt);
        void this.failed(run, error, { kind: 'failed' });
      },
    );
  }

  /** End the runs whose handlers returned plain values (in the order they returned). */
  private readonly endReturned = (): void => {
    const runs = this.returnedRuns;
    const values = this.returnedValues;
    this.returnedRuns = [];
    this.returnedValues = [];
    for (let i = 0; i < runs.length; i++) {
      try {
        this.succeeded(runs[i]!, values[i]!);
      } catch (e) {
        this.ctx.report(e);
      }
    }
  };

  /** The answer to a run's complete (sent by the lease loop at Redis time `at`). */
  afterComplete(run: Run<T>, result: R, ok: boolean, at: number): void {
    this.ctx.runs.settled(run);
    if (ok) {
      run.finishedAt = at;
      this.ctx.emit('completed', run.job, result);
    } else {
      this.ctx.cancels.endedLost(run.lease.token);
      this.ctx.emit('leaseLost', run.job, 'completed or cancelled elsewhere before this complete');
    }
  }

  private succeeded(run: Run<T>, result: R): void {
    if (run.ended) return;
    let encoded: string | undefined;
    const o = this.ctx.queue.options;
    // Results are stored, or go to a flow child's parent or are kept with their job (undefined
    // is not kept, and a parent gets null for it).
    if (
      o.resultTtlMs > 0 ||
      ((run.lease.parent || o.keepCompleted.count > 0) && result !== undefined)
    ) {
      // Encoded once, here: the complete sends this string.
      try {
        encoded = encodeResult(result, o.maxPayloadBytes);
      } catch (e) {
        // encodeResult's own message says what could not be encoded, or its size.
        this.ctx.report(
          new WorkQueueError(
            e instanceof WorkQueueError ? e.code : 'ENCODE_FAILED',
            `job ${run.job.id}, completed without its result: ${errorMessage(e)}`,
          ),
        );
        result = null as R; // (as stored: read back as null)
        encoded = 'null';
      }
    }
    this.ctx.runs.end(run, { kind: 'completed' });
    // (Its data is decoded again if read: the 'completed' listeners' job, the handler's later.)
    releaseData(run);
    if (run.linesOut === undefined) this.complete(run, result, encoded);
    else void this.ctx.track(run.linesOut.then(() => this.complete(run, result, encoded)));
  }

  private complete(run: Run<T>, result: R, encoded: string | undefined): void {
    this.ctx.loop.complete({ lease: run.lease, result, encoded, run, logs: takeLogs(run) });
  }

  private async failed(run: Run<T>, error: unknown, outcome: RunOutcome): Promise<void> {
    if (run.ended) return;
    // A RateLimitError holds the job's group (ungrouped: the queue): its jobs prefetched here
    // must not start in the slot this run frees, and go back behind it (rateLimited).
    // Lease replies that come before Redis has its hold were leased before it: theirs go back
    // too (ahead of it: they were in Redis' reply when it was told), unstarted.
    const limited = error instanceof RateLimitError;
    const held = limited ? this.ctx.runs.takeWaiting(run.lease.group) : NO_LEASES;
    const unhold = limited ? this.ctx.runs.holdForLimit(run.lease.group) : undefined;
    this.ctx.runs.end(run, outcome);
    try {
      await this.tellFailed(run, error, held);
    } finally {
      unhold?.();
      // Told, or given up at close() with Redis out of reach: its lease lapses, and the job
      // runs again as after a worker that died (until then reconciles count it as ours).
      this.ctx.runs.settled(run);
    }
  }

  /**
   * Send `call` until Redis answers it: a run's outcome that is not told would let the job run
   * again as if this run had not been (no attempt counted, no delay kept). Backs off to 2 s;
   * the first failure is reported. Gives up (undefined) when close() has used its budget, and at
   * once on an error that sending again would not mend (refused arguments, a key of the wrong
   * type): then the next reconcile gives the job back.
   */
  private async told<X>(call: () => Promise<X>): Promise<{ answer: X } | undefined> {
    const ctx = this.ctx;
    for (let wait = 100, reported = false; ; wait = Math.min(wait * 2, 2_000)) {
      try {
        return { answer: await ctx.track(call()) };
      } catch (e) {
        if (!reported) ctx.report(e);
        reported = true;
        if (e instanceof WorkQueueError && e.code !== 'REDIS_UNAVAILABLE') return undefined;
        if (ctx.closeBy !== undefined && Date.now() + wait >= ctx.closeBy) return undefined;
        // (Not holding the process open; a close() whose budget ran out meanwhile: nothing more
        // is sent after it resolved.)
        await new Promise((resolve) => setTimeout(resolve, wait).unref());
        if (ctx.closeBy !== undefined && Date.now() >= ctx.closeBy) return undefined;
      }
    }
  }

  /** Tell Redis that a run's handler failed (or hit a rate limit), then what came of it. */
  private async tellFailed(
    run: Run<T>,
    error: unknown,
    held: readonly LeasedJob<T>[],
  ): Promise<void> {
    const ctx = this.ctx;
    // A handed-off job's lease is ours only once adopted (the next flush, already scheduled).
    const owned = await ctx.handoffs.adopted(run.lease);
    if (owned && error instanceof RateLimitError) {
      await run.linesOut; // (see Run.linesOut: the lines a renewal carries stay)
      await this.rateLimited(run, error.delayMs, held);
      return;
    }
    // (Not ours: the jobs it held go back all the same.)
    if (held.length > 0) await ctx.track(ctx.queue.release(held)).catch((e) => ctx.report(e));
    const delayed = delayOf(error);
    // (0 ms is a delay too: the job runs again at once, no attempt counted.)
    if (owned && delayed !== undefined) {
      await this.delayed(run, delayed);
      return;
    }
    let outcome: FailOutcome = 'lost';
    if (owned) {
      const opts: FailOptions = { delayMs: backoffDelayFor(ctx, run, error) };
      await run.linesOut; // (see Run.linesOut)
      const logs = takeLogs(run);
      const r = await this.told(() => ctx.queue.failAttempt(run.lease, error, opts, logs));
      if (!r) return;
      outcome = r.answer.outcome;
      run.finishedAt = r.answer.at;
    }
    ctx.emit('failed', run.job, error, outcome);
    if (outcome === 'retried') ctx.emit('retried', run.job, error);
    else if (outcome === 'dead') ctx.emit('dead', run.job, error);
    else {
      ctx.cancels.endedLost(run.lease.token);
      ctx.emit('leaseLost', run.job, 'lease lost before fail');
    }
    ctx.loop.schedule();
  }

  /**
   * The handler threw `RateLimitError`: its job goes back to the front (no attempt counted) and
   * the queue leases nothing for `ms` (rounded up, 1 ms .. one day). Told until Redis answers
   * (see told()).
   */
  private async rateLimited(run: Run<T>, ms: number, held: readonly LeasedJob<T>[]): Promise<void> {
    const ctx = this.ctx;
    // (Normalised by RateLimitError itself; again for a subclass's own delayMs.)
    const delayMs = rateLimitMs(ms);
    // Its held prefetched jobs go back first, then it: it leads them again, in their order.
    const r = await this.told(() => ctx.queue.rateLimited(run.lease, delayMs, held));
    if (!r) {
      // The held jobs are in no buffer (nothing renews them): the next round's reconcile gives
      // back what this worker holds and does not know, rather than letting their leases lapse.
      if (held.length > 0) ctx.loop.needReconcile = true;
    } else if (r.answer < 0) {
      ctx.cancels.endedLost(run.lease.token);
      ctx.emit('leaseLost', run.job, 'lease lost before rate limit');
    }
    ctx.loop.schedule();
  }

  /**
   * The handler threw `DelayedError`: its job waits in the delayed set (no attempt counted, its
   * data as last updated). Told until Redis answers (see told()).
   */
  private async delayed(run: Run<T>, when: number | Date): Promise<void> {
    const ctx = this.ctx;
    await run.linesOut; // (see Run.linesOut)
    const logs = takeLogs(run);
    const r = await this.told(() => ctx.queue.moveToDelayed(run.lease, when, logs));
    if (r && r.answer === undefined) {
      ctx.cancels.endedLost(run.lease.token);
      ctx.emit('leaseLost', run.job, 'lease lost before DelayedError');
    }
    ctx.loop.schedule();
  }

  private async timeOut(run: Run<T>, ms: number): Promise<void> {
    if (run.ended) return;
    const error = new WorkQueueError('TIMEOUT', `job ${run.job.id} timed out after ${ms} ms`);
    await this.failed(run, error, { kind: 'timedOut', error });
  }
}
