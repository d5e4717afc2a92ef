// The worker's subscription to its queue's notice channel (cancel notices, queue pause/resume,
// group pause), on the process's notice connection for its client's options (shared with the
// other Workers: lib/redis/notice-hub.ts), and how the worker catches up on what it said before
// we listened.
import { joinNotices, type NoticeMembership } from '../redis/notice-hub.js';
import { delay, within } from '../util/timeout.js';
import { CALL_TIMEOUT_MS, type WorkerContext } from './context.js';

export class EventsChannel<T, R> {
  private member: NoticeMembership | undefined;
  private closed = false;
  /** The first SUBSCRIBE held (after a reconnect, missed() subscribes again). */
  private subscribed = false;
  /** A catch-up after a reconnect is on its way. */
  private catching = false;
  /** Drops of the connection since it first subscribed. */
  private drops = 0;

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  /**
   * Join the notice connection and subscribe; resolves once subscribed (rejects only when
   * closed first). A refused SUBSCRIBE (Redis unreachable) is sent again until it holds or we
   * close. The worker does not wait for it before leasing: see catchUp().
   */
  async open(): Promise<void> {
    const { ctx } = this;
    const member = joinNotices(ctx.queue.client, ctx.queue.keys.noticeChannel, {
      message: (message) => {
        // Messages read together are handed over one by one: a slot one frees is filled only
        // once the others were read (a cancel of the buffered job that would start: see
        // RunTable).
        ctx.runs.holdRefills();
        if (message.startsWith('gp:')) {
          // A group paused (pauseGroup): its prefetched jobs go back to the front of its line.
          ctx.runs.giveBack(ctx.runs.takeWaiting(message.slice(3)));
        } else if (!ctx.queuePause.onEvent(message)) ctx.cancels.onEvent(message);
      },
      // Down: a notice sent now is lost (pub/sub keeps nothing). Prefetched jobs wait until we
      // listen again and caught up (see missed()).
      dropped: () => {
        if (this.closed || !this.subscribed) return;
        this.drops++;
        ctx.renewer.deafened();
      },
      ready: () => {
        if (this.subscribed && !this.closed) void this.missed(member);
      },
      // Ended for good (a retryStrategy that gives up): no notice comes any more; prefetched
      // jobs start as before the channel (a renewal first), cancels are learned at renewals.
      ended: () => {
        if (this.closed || ctx.closing || !this.subscribed) return;
        ctx.report(new Error(`queue ${ctx.queue.name}: the worker's notice channel ended`));
        ctx.renewer.heard();
      },
    });
    this.member = member;
    for (;;) {
      try {
        await member.subscribe();
        this.subscribed = true;
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

  /**
   * Connected again after a drop: once subscribed again (our SUBSCRIBE: ioredis' own is off, see
   * subscriber(); a Cluster's is answered before ours), learn what was said meanwhile: a queue paused meanwhile
   * pauses us (prefetched jobs go back), so do the prefetched jobs of groups paused meanwhile;
   * then a renewal drops cancelled and lost leases (and aborts their runs) before prefetched
   * jobs start (LeaseRenewer.heard).
   */
  private async missed(member: NoticeMembership): Promise<void> {
    const { ctx } = this;
    if (this.catching) return;
    this.catching = true;
    let pause = 0;
    try {
      // Again while the connection dropped once more meanwhile (ready again by then), and
      // after a failure (a read that failed says nothing: we stay deaf), backing off up to 5 s;
      // the first failure of a catch-up is reported, not each retry.
      let wait = 200;
      let reported = false;
      for (let at = -1; at !== this.drops;) {
        at = this.drops;
        try {
          await member.subscribe();
          pause = await ctx.queue.pauseVersion();
          ctx.queuePause.fromReply(pause);
          const groups = [...new Set(ctx.runs.waiting().map((l) => l.group))].filter(
            (g): g is string => g !== undefined,
          );
          if (groups.length > 0) {
            for (const g of await ctx.queue.pausedGroups(groups)) {
              ctx.runs.giveBack(ctx.runs.takeWaiting(g));
            }
          }
        } catch (e) {
          // (Ended for good: the 'end' listener took over.)
          if (this.closed || ctx.closing || member.connection.status === 'end') return;
          if (!reported) ctx.report(e);
          reported = true;
          await delay(wait);
          wait = Math.min(wait * 2, 5_000);
          at = -1;
        }
      }
    } finally {
      this.catching = false;
    }
    if (this.closed || ctx.closing) return;
    ctx.renewer.heard();
    // Not paused in Redis: a pause we heard of before the drop may have ended unheard.
    if (pause === 0) ctx.queuePause.recheck();
  }

  /** Leave the notice connection (bounded; the last Worker on it closes it). Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    await this.member?.leave();
  }
}
