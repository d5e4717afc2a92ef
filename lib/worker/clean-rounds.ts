// A worker's periodic clean of its queue (`cleanIntervalMs`): one round per interval among all
// the queue's workers (and cleaners), whoever takes the round's guard first.
import type { WorkerContext } from './context.js';

export class CleanRounds<T, R> {
  private timer: NodeJS.Timeout | undefined;
  private cleaning = false;

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  /** Take part in the rounds from now on (none when `cleanIntervalMs` is 0). */
  start(): void {
    const ms = this.ctx.settings.cleanIntervalMs;
    if (ms <= 0) return;
    this.timer = setInterval(() => void this.round(), ms);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One round of the queue's clean, unless another worker (or process) cleaned this round. */
  private async round(): Promise<void> {
    const { ctx } = this;
    if (this.cleaning || ctx.closing) return;
    this.cleaning = true;
    try {
      await ctx.queue.cleanIfDue(ctx.settings.cleanIntervalMs, `worker:${ctx.id}`);
    } catch (e) {
      ctx.report(e);
    } finally {
      this.cleaning = false;
    }
  }
}
