// waitForResult: the outcome of one job, whether it finished before or after the call — one
// shared QueueEvents reader per queue listens first, then the job's state is read once.
import { invalid, JobOutcomeError, WorkQueueError } from '../errors.js';
import type { QueueContext } from '../queue/context.js';
import type { JobInfo } from '../types.js';
import { within } from '../util/timeout.js';
import { QueueEvents } from './queue-events.js';
import type { QueueEvent } from './types.js';

export interface WaitForResultOptions {
  /** Give up after this many ms (rejects with code TIMEOUT). Default 30 000. */
  timeoutMs?: number;
  /** Stop waiting when it fires (rejects with code ABORTED). */
  signal?: AbortSignal;
}

type Ending = Extract<QueueEvent, { kind: 'completed' | 'dead' | 'cancelled' }>;

export class ResultWaiter<T, R> {
  private reader: QueueEvents | undefined;

  constructor(
    private readonly ctx: QueueContext,
    private readonly getJob: (id: string) => Promise<JobInfo<T, R> | null>,
  ) {}

  async wait(id: string, o: WaitForResultOptions = {}): Promise<R | undefined> {
    this.ctx.checkId(id);
    const timeoutMs = o.timeoutMs ?? 30_000;
    const problems: string[] = [];
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
      problems.push(`timeoutMs must be a positive integer, got ${JSON.stringify(o.timeoutMs)}`);
    if (o.signal !== undefined && !(o.signal instanceof AbortSignal))
      problems.push('signal must be an AbortSignal');
    if (problems.length > 0) throw invalid(problems);
    if (this.ctx.options.eventMaxLen === 0) {
      throw new WorkQueueError('BAD_STATE', `queue ${this.ctx.name}: waitForResult needs events`);
    }
    const aborted = () =>
      new WorkQueueError('ABORTED', `waitForResult(${id}): aborted`, [], {
        cause: o.signal?.reason,
      });
    if (o.signal?.aborted) throw aborted();
    const deadline = Date.now() + timeoutMs;
    const timedOut = () =>
      new WorkQueueError('TIMEOUT', `waitForResult(${id}): no outcome within ${timeoutMs} ms`);

    const reader = (this.reader ??= new QueueEvents(this.ctx.client, this.ctx.name, {
      prefix: this.ctx.options.prefix,
      commandTimeoutMs: this.ctx.options.commandTimeoutMs,
    }));
    reader.setMaxListeners(0); // one listener per wait in progress
    if (!(await reader.ready(timeoutMs))) throw timedOut();
    // Listen first, then read the state: an ending logged after the reader's position is heard,
    // one logged before it shows in the state.
    let heard: (e: Ending) => void = () => undefined;
    const ending = new Promise<Ending>((r) => (heard = r));
    const listener = (e: QueueEvent) => {
      if (e.id === id && (e.kind === 'completed' || e.kind === 'dead' || e.kind === 'cancelled'))
        heard(e);
    };
    let onAbort: (() => void) | undefined;
    const abort = new Promise<'aborted'>((r) => {
      onAbort = () => r('aborted');
      o.signal?.addEventListener('abort', onAbort, { once: true });
    });
    reader.on('event', listener);
    try {
      const now = await this.getJob(id);
      if (now?.state === 'completed') return now.result;
      if (now?.state === 'dead') {
        throw new JobOutcomeError('JOB_DEAD', id, now.deadReason ?? now.lastError ?? '');
      }
      if (now === null) {
        throw new WorkQueueError(
          'NOT_FOUND',
          `waitForResult(${id}): no such job (a finished job is known only while its result is kept: storeResults)`,
        );
      }
      const e = await within(Promise.race([ending, abort]), deadline - Date.now());
      if (e === undefined) throw timedOut();
      if (e === 'aborted') throw aborted();
      if (e.kind === 'dead') throw new JobOutcomeError('JOB_DEAD', id, e.reason);
      if (e.kind === 'cancelled') throw new JobOutcomeError('JOB_CANCELLED', id, '');
      if (!e.resultStored) return undefined;
      const after = await this.getJob(id);
      return after?.state === 'completed' ? after.result : undefined;
    } finally {
      reader.off('event', listener);
      if (onAbort) o.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Close the shared reader (if one was opened). */
  async close(): Promise<void> {
    const r = this.reader;
    this.reader = undefined;
    await r?.close();
  }
}
