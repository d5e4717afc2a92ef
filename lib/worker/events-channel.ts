// The worker's subscription to its queue's notice channel (cancel notices, queue pause/resume,
// group pause), on a connection of its own, and how the worker catches up on what it said before
// we listened.
import type { Cluster, Redis } from 'ioredis';
import { closeSubscriber, duplicate } from '../redis/connection.js';
import { delay, within } from '../util/timeout.js';
import { CALL_TIMEOUT_MS, type WorkerContext } from './context.js';

export class EventsChannel<T, R> {
  private conn: Redis | Cluster | undefined;
  private closed = false;

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  /**
   * Open the connection and subscribe; resolves once subscribed (rejects only when closed
   * first). A refused SUBSCRIBE (Redis unreachable) is sent again until it holds or we close.
   * The worker does not wait for it before leasing: see catchUp().
   */
  async open(): Promise<void> {
    const { ctx } = this;
    const sub = duplicate(ctx.queue.client);
    this.conn = sub;
    sub.on('error', () => {
      /* reconnects and resubscribes by itself */
    });
    sub.on('message', (_channel: string, message: string) => {
      // Messages read together are handed over one by one: a slot one frees is filled only
      // once the others were read (a cancel of the buffered job that would start: see RunTable).
      ctx.runs.holdRefills();
      if (message.startsWith('gp:')) {
        // A group paused (pauseGroup): its prefetched jobs go back to the front of its line.
        ctx.runs.giveBack(ctx.runs.takeWaiting(message.slice(3)));
      } else if (!ctx.queuePause.onEvent(message)) ctx.cancels.onEvent(message);
    });
    for (;;) {
      try {
        await sub.subscribe(ctx.queue.keys.noticeChannel);
        return;
      } catch (e) {
        if (this.closed || ctx.closing) throw e;
        ctx.report(e);
        await delay(200);
      }
    }
  }

  /**
   * Just subscribed: the first lease calls went out before we listened, so a cancel or a queue
   * resume published between one of them and our SUBSCRIBE went unheard. Once every call sent
   * before the subscription settled, look at what they gave us: one lease extension of every
   * held job (a cancelled or lost one ends as lost, its signal aborted; an unadopted hand-off is
   * checked by its adoption), and, paused by a lease reply, one lease call.
   */
  async catchUp(): Promise<void> {
    const { ctx } = this;
    await within(Promise.allSettled([...ctx.inflight]), CALL_TIMEOUT_MS);
    if (ctx.closing) return;
    await ctx.renewer.renew();
    ctx.queuePause.recheck();
  }

  /** Close the connection (bounded). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.conn) await closeSubscriber(this.conn);
  }
}
