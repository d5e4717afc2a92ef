// waitForResult: the outcome of one job, whether it finished before or after the call. The log's
// position is read first (on the queue's client, so ahead of anything the caller sends after the
// call), then a shared reader listens, the log between is read, and only then the job's state.
import { invalid, JobOutcomeError, redisError, WorkQueueError } from '../errors.js';
import type { QueueContext } from './context.js';
import { bounded } from '../redis/bounded.js';
import type { JobInfo } from '../types/index.js';
import { optionsObject, shown, timerProblem } from '../util/checks.js';
import { within } from '../util/timeout.js';
import { parseEntry } from '../events/parse.js';
import { QueueEvents } from '../events/queue-events.js';
import type { QueueEvent } from '../events/types.js';

export interface WaitForResultOptions {
  /** Give up after this many ms (rejects with code TIMEOUT). Default 30 000. */
  timeoutMs?: number;
  /** Stop waiting when it fires (rejects with code ABORTED, the signal's reason as cause). */
  signal?: AbortSignal;
}

type Ending = Extract<QueueEvent, { kind: 'completed' | 'dead' | 'cancelled' }>;

/** Whether stream id `a` comes after `b`. */
function after(a: string, b: string): boolean {
  const [am = 0, as = 0] = a.split('-').map(Number);
  const [bm = 0, bs = 0] = b.split('-').map(Number);
  return am !== bm ? am > bm : as > bs;
}

const isEnding = (e: QueueEvent): e is Ending =>
  e.kind === 'completed' || e.kind === 'dead' || e.kind === 'cancelled';

export class ResultWaiter<T, R> {
  private reader: QueueEvents | undefined;
  /** Ends each wait in progress when the queue closes (its reader goes: it would hear nothing). */
  private readonly waiting = new Set<() => void>();
  /** The queue closed: a wait is refused (its reader would keep the process alive). */
  private closed = false;

  constructor(
    private readonly ctx: QueueContext,
    private readonly getJob: (id: string) => Promise<JobInfo<T, R> | null>,
  ) {}

  async wait(id: string, opts: WaitForResultOptions = {}): Promise<R | undefined> {
    const ctx = this.ctx;
    const problems: string[] = [];
    ctx.checkId(id, problems);
    const o: WaitForResultOptions = optionsObject(
      'options',
      opts,
      ['timeoutMs', 'signal'],
      problems,
    );
    const timeoutMs = o.timeoutMs ?? 30_000;
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
      problems.push(`timeoutMs must be a positive integer, got ${shown(o.timeoutMs)}`);
    else {
      const over = timerProblem('timeoutMs', timeoutMs);
      if (over) problems.push(over);
    }
    if (o.signal !== undefined && !(o.signal instanceof AbortSignal))
      problems.push('signal must be an AbortSignal');
    if (problems.length > 0) throw invalid(problems);
    if (this.closed)
      throw new WorkQueueError('CLOSED', `waitForResult(${id}): the queue is closed`);
    if (ctx.options.eventMaxLen === 0) {
      throw new WorkQueueError('BAD_STATE', `queue ${ctx.name}: waitForResult needs events`);
    }
    const aborted = () =>
      new WorkQueueError('ABORTED', `waitForResult(${id}): aborted`, [], {
        cause: o.signal?.reason,
      });
    if (o.signal?.aborted) throw aborted();
    const deadline = Date.now() + timeoutMs;
    const left = () => Math.max(1, deadline - Date.now());
    // Sent now, before any await: the log's position at the call.
    const start = this.tail();
    let onAbort: () => void = () => undefined;
    let onClose: () => void = () => undefined;
    const abort = new Promise<'aborted' | 'closed'>((r) => {
      onAbort = () => r('aborted');
      onClose = () => r('closed');
    });
    o.signal?.addEventListener('abort', onAbort, { once: true });
    this.waiting.add(onClose);
    let heard: (e: Ending) => void = () => undefined;
    const ending = new Promise<Ending>((r) => (heard = r));
    let caughtUp: () => void = () => undefined;
    const reachedTail = new Promise<'caught up'>((r) => (caughtUp = () => r('caught up')));
    let target: string | undefined;
    let t0 = '';
    const listener = (e: QueueEvent) => {
      if (e.id === id && isEnding(e) && after(e.eventId, t0)) heard(e);
      if (target !== undefined && !after(target, e.eventId)) caughtUp();
    };
    const reader = (this.reader ??= this.openReader());
    try {
      const step = async <X>(p: Promise<X>): Promise<X> => {
        const r = await within(Promise.race([p.then((v) => ({ v })), abort]), left());
        if (r === undefined) throw this.timedOut(id, timeoutMs);
        if (r === 'aborted') throw aborted();
        if (r === 'closed')
          throw new WorkQueueError('CLOSED', `waitForResult(${id}): the queue was closed`);
        return r.v;
      };
      t0 = await step(start);
      if (!(await step(reader.ready(left())))) throw this.timedOut(id, timeoutMs);
      reader.on('event', listener);
      // What the reader delivered before it listened, from the call's position on.
      const at = reader.lastId!;
      if (after(at, t0)) {
        const entries = await step(this.range(t0, at));
        for (const [eid, f] of entries) for (const e of parseEntry(eid, f)) listener(e);
      }
      const state = await step(this.getJob(id));
      if (state?.state === 'completed') return state.result;
      if (state?.state === 'dead') {
        throw new JobOutcomeError('JOB_DEAD', id, state.deadReason ?? state.lastError ?? '');
      }
      let waitFor: Promise<Ending | 'caught up'> = ending;
      if (state === null) {
        // Gone: it ended after the call (its ending is in the log, up to the tail now), or it
        // never existed (or ended before the call, with no result kept).
        target = await step(this.tail());
        if (!after(target, reader.lastId!)) caughtUp();
        waitFor = Promise.race([ending, reachedTail]);
      }
      const e = await step(waitFor);
      if (e === 'caught up') {
        throw new WorkQueueError(
          'NOT_FOUND',
          `waitForResult(${id}): no such job (a finished job is known only while its result is kept: storeResults)`,
        );
      }
      if (e.kind === 'dead') throw new JobOutcomeError('JOB_DEAD', id, e.reason);
      if (e.kind === 'cancelled') throw new JobOutcomeError('JOB_CANCELLED', id, '');
      if (!e.resultStored) return undefined;
      if ('result' in e) return e.result as R;
      const done = await step(this.getJob(id));
      return done?.state === 'completed' ? done.result : undefined;
    } finally {
      start.catch(() => undefined);
      reader.off('event', listener);
      o.signal?.removeEventListener('abort', onAbort);
      this.waiting.delete(onClose);
    }
  }

  /** Close the shared reader (if one was opened); a wait in progress rejects with CLOSED. */
  async close(): Promise<void> {
    this.closed = true;
    for (const end of this.waiting) end();
    this.waiting.clear();
    const r = this.reader;
    this.reader = undefined;
    await r?.close();
  }

  private openReader(): QueueEvents {
    const r = new QueueEvents(this.ctx.client, this.ctx.name, {
      prefix: this.ctx.options.prefix,
      commandTimeoutMs: this.ctx.options.commandTimeoutMs,
    });
    r.setMaxListeners(0); // one listener per wait in progress
    return r;
  }

  private timedOut(id: string, ms: number): WorkQueueError {
    return new WorkQueueError('TIMEOUT', `waitForResult(${id}): no outcome within ${ms} ms`);
  }

  /** The id of the log's last entry ('0-0' when empty), read on the queue's client. */
  private async tail(): Promise<string> {
    const r = await this.redis((c) => c.xrevrange(this.ctx.keys.eventLog, '+', '-', 'COUNT', 1));
    return r[0]?.[0] ?? '0-0';
  }

  /** The log's entries after `from`, up to `to`. */
  private range(from: string, to: string): Promise<[string, string[]][]> {
    return this.redis((c) => c.xrange(this.ctx.keys.eventLog, '(' + from, to));
  }

  private async redis<X>(send: (c: QueueContext['client']) => Promise<X>): Promise<X> {
    const { client, name, options } = this.ctx;
    const context = `queue ${name}: waitForResult`;
    try {
      return await bounded(client, options.commandTimeoutMs, context, () => send(client));
    } catch (e) {
      throw redisError(context, e);
    }
  }
}
