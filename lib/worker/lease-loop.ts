// The lease loop: one call sends completes, adopts hand-offs, leases; then it decides what next.
import { WorkQueueError } from '../errors.js';
import type { CompleteItem } from '../queue/index.js';
import type { LeasedJob } from '../types/index.js';
import { firstShare, resultUnits } from '../util/call-share.js';
import { within } from '../util/timeout.js';
import type { WorkerContext } from './context.js';
import type { LeaseLoopPart, Run } from './parts.js';
import { deliverFlowNotices } from './flow-notices.js';
import * as L from './lease-sizing.js';
import { LeaseTimers, RedisClock } from './lease-timers.js';
import { ParkState } from './park-state.js';

export class LeaseLoop<T, R> implements LeaseLoopPart<T, R> {
  /** Completes of finished runs, sent with the next call. */
  private completes: Array<CompleteItem<R> & { run: Run<T> }> = [];
  /** Jobs asked for by lease calls still in flight. */
  private requested = 0;
  /** Lease calls (asking for jobs) in flight. */
  private leasing = 0;
  /** The last lease call got all it asked for: the queue has a backlog (lease in shares). */
  private backlog = false;
  /** Jobs leased by calls answered while closing or paused, given back together (giveBackLate). */
  private late: LeasedJob<T>[] = [];
  /** Averages for 'auto' prefetch and leases by reference. */
  private readonly sizing = new L.LeaseSizing();
  /** A suspect job waits to run alone: lease nothing until nothing is held (see lease_jobs). */
  private draining = false;
  /** Redis may hold jobs for us that we do not know of (a reply was lost): reconcile first. */
  needReconcile = false;
  private readonly clock = new RedisClock(); // (from the last lease reply's Redis time)
  redisNow = () => this.clock.now();
  /** Wake-ups (IdleWait.wakes) read before an answered lease call went out: it saw their jobs. */
  private covered = 0;
  private readonly park = new ParkState();
  /** The idle wait took a wake-up this worker cannot act on: the next call passes it on. */
  passOn = false;
  private reconciling = false;
  private queued = false; // (a flush is scheduled)
  private readonly timers = new LeaseTimers(() => this.schedule());

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  /** Jobs held leased ahead of free slots now (see the `prefetch` option). */
  get prefetch(): number {
    return this.sizing.prefetch(this.ctx.settings.prefetch, this.ctx.settings.concurrency);
  }

  /** A handler ran `ms` (for 'auto' prefetch). */
  sampleJob(ms: number): void {
    this.sizing.sampleJob(ms);
  }

  /** Send this complete with the next call. */
  complete(item: CompleteItem<R> & { run: Run<T> }): void {
    this.completes.push(item);
    this.schedule();
  }

  /** Flush soon (once per turn of the event loop, however often asked). */
  schedule(): void {
    if (this.queued) return;
    this.queued = true;
    setImmediate(() => {
      this.queued = false;
      void this.flush();
    });
  }

  /** Send the completes waiting now (see call), unless a call is being held back. */
  private flushFinished = () =>
    void (this.completes.length > 0 && !this.timers.retrying && !this.reconciling && this.flush());

  /** close(): no more retries nor looks at due jobs. */
  stop(): void {
    this.timers.stop();
  }

  /** Jobs to ask for now: free slots plus prefetch, less what is held or on its way. */
  private freeSlots(): number {
    const { settings, runs } = this.ctx;
    return settings.concurrency + this.prefetch - runs.held - this.requested;
  }

  /** Completes and a lease into free slots, one round trip; several in flight ask for slots apart. */
  async flush(): Promise<void> {
    const { ctx } = this;
    if (!ctx.started) return; // (start() schedules the first flush)
    if (this.needReconcile && !ctx.closing) {
      // A reconcile that failed is tried again by the retry timer, not at once (no tight loop
      // while Redis refuses it, e.g. NOREPLICAS after a failover).
      if (this.timers.retrying) return;
      await this.reconcile();
    }
    if (this.reconciling) return;
    const passOn = this.passOn && !ctx.canStart; // (a slot freed meanwhile: we lease it)
    this.passOn = false;
    const free =
      ctx.closing || ctx.holding || this.timers.retrying || this.holdingBack() || passOn
        ? 0
        : Math.max(0, this.freeSlots());
    // At most LEASE_SHARES calls lease at once (more would split the room ever smaller); the
    // rest goes to the next call, in its own turn. Without a backlog (idle, starting) one call
    // asks for the whole room: a second would only come back empty as well.
    const most = this.backlog ? L.leaseShare(this.ctx.settings.concurrency, this.prefetch) : free;
    const want = this.leasing < L.LEASE_SHARES ? Math.min(L.MAX_LEASE_COUNT, free, most) : 0;
    if (want > 0 && want < free && this.leasing + 1 < L.LEASE_SHARES) this.schedule();
    await this.call(want);
  }

  /**
   * One call: the completes and adoptions waiting, and a lease of `want` jobs. False when it
   * failed (the completes and adoptions wait for the next call, which is scheduled).
   */
  private async call(want: number): Promise<boolean> {
    const { ctx } = this;
    const { runs, handoffs, settings } = ctx;
    if (this.completes.length === 0 && want === 0 && !handoffs.pending) return true;
    // At most CALL_UNITS of results in a call: the rest go with the next, at once.
    const [items, rest] = firstShare(this.completes, resultUnits);
    if ((this.completes = rest).length > 0) this.schedule();
    const { adopt, sweep } = handoffs.take();
    // Parked (handed jobs) only if a slot to run one stays free: not for prefetch room alone.
    const parkBelow = Math.max(0, settings.concurrency - runs.held);
    const parked = this.park.send(want > 0, adopt.length > 0 || sweep);
    this.requested += want;
    if (want > 0) this.leasing++;
    const wakes = ctx.idle.wakes;
    const sentAt = performance.now();
    ctx.progress.sent();
    try {
      const r = await ctx.track(
        ctx.queue.completeAndLease(
          items,
          want > 0 ? { count: want, leaseMs: settings.leaseMs, workerId: ctx.id } : undefined,
          {
            workerId: ctx.id,
            parkMs: settings.idleTimeoutMs + L.PARK_MARGIN_MS,
            parkBelow,
            adopt,
            sweep,
            leaseMs: settings.leaseMs,
            byRef: this.sizing.byRef,
            ownResends: true,
            keepRaw: true,
          },
        ),
      );
      ctx.progress.answered();
      this.clock.set(r.now);
      this.requested -= want;
      this.timers.answered();
      if (want > 0) {
        this.park.answered(parked, r.jobs.length, parkBelow);
        this.leasing--;
        this.covered = Math.max(this.covered, wakes);
        this.sizing.sampleCall(performance.now() - sentAt);
        this.backlog = r.jobs.length === want;
      }
      this.sizing.samplePayloads(r.jobs.length, r.payloadBytes);
      if (r.lostJobs) {
        // Leased in Redis, payloads unread: reconcile gives them back.
        this.needReconcile = true;
        this.schedule();
      }
      if (r.drain) this.draining = true;
      // Sent before the process was away: what it leased or adopted may be lost (lease-renewer.ts).
      // (Refills held meanwhile: an adoption or a lost one freeing a slot would send that renewal
      // before this reply's jobs are placed.)
      if ((r.jobs.length > 0 || adopt.length > 0) && ctx.renewer.answered(sentAt)) {
        runs.holdRefills();
      }
      r.adopted.forEach((ok, i) => handoffs.afterAdopt(adopt[i]!, ok));
      items.forEach((it, i) =>
        ctx.runner.afterComplete(it.run, it.result as R, r.completed[i]!, r.now),
      );
      deliverFlowNotices(ctx, items, r.completed);
      if (ctx.closing || ctx.holding) {
        // Too late to start them: back to the front, once every lease call in flight answered
        // (all together, so that they keep their order; paused by us or queue-wide).
        this.late.push(...r.jobs);
        this.giveBackLate();
        ctx.queuePause.fromReply(r.paused);
        return true;
      }
      this.giveBackLate(); // resumed meanwhile: they go back all the same
      runs.place(r.jobs, sentAt);
      // Jobs that finished at once (this turn's microtasks) go out now, before the answer to
      // another call in flight is read: merged into one later call, the two fall into lockstep.
      if (r.jobs.length > 0) process.nextTick(() => this.flushFinished());
      if (r.drain && this.holdsNothing()) {
        // A suspect waits for what Redis says we hold, and we hold nothing, nor is anything on
        // its way: those leases are unknown to us (a reply we never got). Nothing we run would
        // end and call again: reconcile (they go back), then lease.
        this.draining = false;
        this.needReconcile = true;
        this.schedule();
      } else if (this.draining && !r.drain && runs.held + this.requested === 0) {
        // Draining, and the last of what we held settled with this call (a call leasing nothing,
        // sent while a drain answer was on its way): nothing else would call again — lease now.
        this.schedule();
      }
      // The queue is paused: wait for 'resumed' (see QueuePause), not on the wake list. A pause
      // we know was resumed since (a newer version): nothing else calls — lease again.
      if (r.paused > 0) {
        ctx.queuePause.fromReply(r.paused);
        if (!ctx.holding) this.schedule();
      } else if (want > 0 && this.freeSlots() > 0 && !r.drain) {
        if (r.jobs.length < want && this.requested === 0) {
          // Ran dry (or flow control allowed fewer; nextDue: when it allows a lease). A wake-up
          // read since this call went out may be for a job added after it ran: lease again.
          // Busy: no wait (it would pop jobs an idle worker can start); unparked if this call
          // parked it; it looks when a run ends, or after idleTimeoutMs. Not parked by this call
          // (a slot freed since): lease again, to park. Else wait on Redis. Already waiting: the
          // wait may end after the next delayed job is due (its wake-up can race this lease):
          // look again then.
          if (ctx.idle.wakes > this.covered) this.schedule();
          else if (!ctx.canStart) {
            if (this.park.unparking()) ctx.idle.unpark();
            this.timers.lookAgainAt(settings.idleTimeoutMs);
          } else if (r.jobs.length >= parkBelow) this.schedule();
          else if (!ctx.idle.waiting) void ctx.idle.wait(r.nextDue, r.now);
          else if (r.nextDue > 0) this.timers.lookAgainAt(r.nextDue - r.now + 1);
        } else if (r.jobs.length === want) {
          this.schedule();
        }
      }
      return true;
    } catch (e) {
      // Keep the completes and adoptions, and try again shortly. Unanswered, the call may still
      // have run: what it leased is ours without our knowing (reconcile).
      this.requested -= want;
      if (want > 0) this.leasing--;
      this.completes = items.concat(this.completes);
      handoffs.putBack(adopt, sweep);
      this.giveBackLate();
      if (!(e instanceof WorkQueueError) || e.code === 'REDIS_UNAVAILABLE')
        this.needReconcile = true;
      ctx.report(e);
      this.retryLater();
      return false;
    }
  }

  /** Closing or paused: give back the jobs of lease calls answered, once none is in flight. */
  private giveBackLate(): void {
    if (this.leasing > 0 || this.late.length === 0) return;
    this.ctx.runs.giveBack(this.late);
    this.late = [];
  }

  /** No job of ours anywhere: running, finishing, prefetched, handed off, or asked for. */
  private holdsNothing = () =>
    this.requested + this.ctx.runs.tokens().length + this.ctx.handoffs.tokens().length === 0;

  /** Lease nothing while a suspect waits for what we hold (`draining`) or runs alone with us. */
  private holdingBack(): boolean {
    if (this.draining) {
      if (this.ctx.runs.held + this.requested > 0) return true;
      this.draining = false;
    }
    return this.ctx.runs.soloHeld();
  }

  /**
   * After a dropped connection or an unanswered call: give back at once what Redis says we hold
   * but we do not know of (a lease whose reply was lost, an entry our cut wait took). Finished
   * runs come first (guarantee 11): their completes go out again (one whose reply was lost finds
   * its job completed by us: true while kept, else false, a leaseLost) and what is unanswered
   * (a fail on its way) counts as known: never given back as if it had not run.
   */
  private async reconcile(): Promise<void> {
    const { ctx } = this;
    if (this.reconciling || ctx.id === '0' || ctx.queue.client.status !== 'ready') return;
    this.reconciling = true;
    try {
      await within(Promise.allSettled([...ctx.inflight]), ctx.queue.options.commandTimeoutMs);
      await ctx.idle.cut(); // ends the wait; its connection reconnects by itself
      this.needReconcile = false;
      if (!(await this.call(0))) {
        this.needReconcile = true; // after the retry (scheduled by the call)
        return;
      }
      const known = [...ctx.runs.tokens(), ...ctx.handoffs.tokens()];
      await ctx.track(ctx.queue.reconcile(ctx.id, known));
    } catch (e) {
      this.needReconcile = true;
      ctx.report(e);
      this.retryLater();
    } finally {
      this.reconciling = false;
    }
    this.schedule();
  }

  private retryLater = () => void (this.ctx.closing || this.timers.retryLater());
}
