// Cancels and completions announced on the queue's notice channel: a cancelled job is never
// started here (running, it is aborted), and the canceller is acknowledged (lib/queue/cancel-acks.ts).
import type { WorkerContext } from './context.js';
import type { CancelsPart } from './parts.js';

/** How long a cancel acknowledgement key lives (the canceller waits commandTimeoutMs at most). */
const CANCEL_ACK_TTL_MS = 60_000;
/** How long a cancelled token is remembered (a lease reply or hand-off later than this is not). */
const CANCEL_MEMORY_MS = 60_000;

export class Cancels<T, R> implements CancelsPart {
  /** Tokens of jobs cancelled while this worker held or might receive them: never started. */
  private readonly cancelled = new Map<string, number>();
  /** Tokens of hand-offs that reached us (recently), to acknowledge their cancels. */
  private readonly handsSeen = new Map<string, number>();
  /** Acknowledgements owed for cancelled hand-offs that have not reached us yet, by token. */
  private readonly pendingAcks = new Map<string, string>();

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  /** The job leased with `token` was cancelled: never start it. */
  has(token: string): boolean {
    return this.cancelled.size > 0 && this.cancelled.has(token);
  }

  /**
   * A hand-off reached us: true to take it; false when it was cancelled on the way (then its
   * cancel is acknowledged now, and it is never started).
   */
  admitHandoff(token: string): boolean {
    if (this.cancelled.has(token)) {
      const ack = this.pendingAcks.get(token);
      if (ack !== undefined) {
        this.pendingAcks.delete(token);
        this.acknowledge(ack);
      }
      return false;
    }
    this.handsSeen.set(token, Date.now());
    this.forgetOldCancels();
    return true;
  }

  /**
   * Messages on the queue's notice channel: `l:<seq>` completed by another lease holder, `f:…`
   * a flow child's parent ended (flowStop), and `c:<seq>:<token>:<holder>:<ack>` cancelled (see
   * cancel.lua). A cancelled job we hold (or that is handed off to parked workers, holder 'h')
   * is never started from now on: dropped from the buffer, aborted if running, remembered by
   * token in case its lease reply or hand-off is still on the way. Then we acknowledge, so that
   * the canceller's `cancel()` resolves.
   */
  onEvent(message: string): void {
    const runs = this.ctx.runs;
    if (message.startsWith('l:')) {
      const run = runs.runOfJob(message.slice(2));
      if (run) runs.end(run, { kind: 'lost', reason: 'job completed by another lease holder' });
      return;
    }
    if (message.startsWith('f:')) return this.flowStop(message);
    if (!message.startsWith('c:')) return;
    const [, , token = '', holder = '', ack = ''] = message.split(':');
    const mine = holder === this.ctx.id;
    if (!mine && holder !== 'h') return;
    const got = this.handsSeen.has(token) || runs.holds(token);
    this.cancelled.set(token, Date.now());
    this.forgetOldCancels();
    // The run holding this token is the job's live run (an older one ended when it was replaced).
    runs.forget(token, 'job cancelled');
    // A hand-off is acknowledged by the worker that got it (whoever popped it); one of ours, at
    // once: from now on we never start it.
    if (mine || got) this.acknowledge(ack);
    else if (holder === 'h') this.pendingAcks.set(token, ack);
  }

  /**
   * `f:<seq>:<token>:<holder>`: the parent of a flow child leased to us ended (flow_cancel.lua).
   * One still waiting in our buffer never starts: we cancel it (as `cancel(id)` would, our own
   * acknowledgement included); one that started runs to its end.
   */
  private flowStop(message: string): void {
    const [, , token = '', holder = ''] = message.split(':');
    if (holder !== this.ctx.id) return;
    const lease = this.ctx.runs.waiting().find((l) => l.token === token);
    if (!lease) return;
    this.cancelled.set(token, Date.now());
    this.ctx.runs.drop(token);
    const ctx = this.ctx;
    void ctx.track(ctx.queue.cancel(lease.id)).catch((e: unknown) => ctx.report(e));
  }

  /**
   * A run's outcome was refused, its job gone (its run ended: it starts no more here). When a
   * cancel took it and we did not hear the notice (sent before our channel listened — a worker
   * that just started — or while it was down), no renewal names the lease any more: the record
   * cancel.lua left for it (cx:<token>) is acknowledged now, or cancel() would wait out
   * commandTimeoutMs. (A cancel we heard was acknowledged then: nothing read.)
   */
  endedLost(token: string): void {
    if (this.cancelled.has(token)) return;
    const ctx = this.ctx;
    const q = ctx.queue;
    void ctx
      .track(q.client.get(q.keys.cancelledLease(token)))
      .then((ack) => {
        if (ack) this.acknowledge(ack);
      })
      .catch((e: unknown) => ctx.report(e));
  }

  /** Tell the canceller that a cancelled job will never start here (see lib/queue/cancel-acks.ts). */
  acknowledge(ack: string): void {
    if (!ack) return;
    const ctx = this.ctx;
    const q = ctx.queue;
    const c = q.client;
    void ctx
      .track(
        Promise.all([
          c.set(q.keys.cancelAck(ack), '1', 'PX', CANCEL_ACK_TTL_MS),
          c.publish(q.keys.cancelAckChannel, ack),
        ]),
      )
      .catch((e: unknown) => ctx.report(e));
  }

  /** Cancel records older than a lease reply or hand-off can be late are dropped. */
  private forgetOldCancels(): void {
    const old = Date.now() - CANCEL_MEMORY_MS;
    for (const map of [this.cancelled, this.handsSeen]) {
      if (map.size < 1_000) continue;
      for (const [token, at] of map) {
        if (at >= old) break;
        map.delete(token);
        this.pendingAcks.delete(token);
      }
    }
  }
}
