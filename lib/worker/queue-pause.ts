// The queue-wide pause (WorkQueue.pause()) as this worker knows it: from 'p:<v>' / 'r:<v>' on the
// queue's notice channel and from lease replies. The newest version wins (a late reply cannot undo
// a resume). Paused, the worker sends nothing until 'resumed' (the lease scripts enforce it).
import type { WorkerContext } from './context.js';
import type { QueuePausePart } from './parts.js';

export class QueuePause<T, R> implements QueuePausePart {
  /** The queue is paused: lease nothing (running jobs finish). */
  paused = false;
  private version = 0;
  private recheckTimer: NodeJS.Timeout | undefined;

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  /** A message of the notice channel; true when it was a pause or resume. */
  onEvent(message: string): boolean {
    const m = /^([pr]):(\d+)$/.exec(message);
    if (!m) return false;
    this.apply(m[1] === 'p', Number(m[2]));
    return true;
  }

  /** A lease reply's pause version (0: not paused, nothing to learn). */
  fromReply(version: number): void {
    if (version > 0) this.apply(true, version);
  }

  /** Paused by what we know: look again now with one lease call (a 'resumed' may be unheard). */
  recheck(): void {
    if (!this.paused || this.ctx.closing) return;
    clearTimeout(this.recheckTimer);
    this.recheckTimer = undefined;
    this.paused = false;
    this.ctx.loop.schedule();
  }

  stop(): void {
    clearTimeout(this.recheckTimer);
  }

  private apply(paused: boolean, version: number): void {
    const { ctx } = this;
    if (version < this.version) return;
    this.version = version;
    if (paused) this.armRecheck();
    else clearTimeout(this.recheckTimer);
    if (paused === this.paused) return;
    this.paused = paused;
    if (paused) {
      // No hand-offs to us; prefetched jobs go back to the front (as Worker.pause()).
      ctx.idle.unpark();
      void ctx.runs.release();
    } else {
      ctx.loop.schedule();
    }
  }

  /**
   * A 'resumed' lost while the subscriber reconnected must not stall us: after the idle timeout
   * (the fallback of every idle wait), look again with one lease call.
   */
  private armRecheck(): void {
    const { ctx } = this;
    clearTimeout(this.recheckTimer);
    this.recheckTimer = setTimeout(() => {
      this.recheckTimer = undefined;
      if (!this.paused || ctx.closing) return;
      this.paused = false;
      ctx.loop.schedule();
    }, ctx.settings.idleTimeoutMs);
    this.recheckTimer.unref();
  }
}
