// The lease renewer (like BullMQ's LockManager): every third of a lease, extends in one call the
// leases of the running and prefetched jobs, carrying the running jobs' log lines (job.log); a
// run whose lease is gone ends as lost.
//
// It also watches for the process being away: frozen (SIGSTOP, a stopped container, a paused
// VM) or its event loop blocked. Away longer than half the heartbeat timeout (or half a lease),
// its heartbeat may have lapsed or its leases expired, and clean() may have given its prefetched
// jobs to another worker, which may even have completed them. So a prefetched job does not
// start after such a gap until a renewal sent after it confirmed which leases are still ours
// (one round trip; the lost ones leave the buffer). Running jobs learn it from that same call.
// The same holds while the worker's notice channel is down (a dropped connection, a Redis
// restart): a cancel published meanwhile is never heard, so no prefetched job starts until the
// channel is back and a renewal sent after it says which leases are still ours (a cancelled
// job's is gone: it leaves the buffer, or a running one ends as lost, its signal aborted; and
// the renewal's answer names the cancel's acknowledgement, sent then: cancel.lua).
import { performance } from 'node:perf_hooks';
import type { LogBatch } from '../job/logs.js';
import type { Lease } from '../types/job.js';
import type { WorkerContext } from './context.js';
import { takeLogs } from './job.js';
import { CALL_UNITS, lineUnits } from '../util/call-share.js';
import type { RenewerPart } from './parts.js';

/**
 * Longest a dropped notice channel holds prefetched jobs: ioredis' longest reconnect backoff
 * plus its wait for a Redis loading its data (as heartbeat.ts' RECONNECT_BRIDGE_MS).
 */
const DEAF_MAX_MS = 15_000;

export class LeaseRenewer<T, R> implements RenewerPart {
  private timer: NodeJS.Timeout | undefined;
  private watch: NodeJS.Timeout | undefined;
  /** When the event loop was last seen running (performance.now()): a watch tick or a start. */
  private seen = 0;
  /** The end of a gap not yet covered by a renewal (prefetched jobs wait meanwhile). */
  private awayAt: number | undefined;
  /** The end of the last gap, covered or not (see `answered`). */
  private lastGapAt = -Infinity;
  /** A renewal that covers the gap is on its way. */
  private verifying = false;
  /** The notice channel is down (see the head of this file), and its bound. */
  private deaf = false;
  private deafTimer: NodeJS.Timeout | undefined;
  /**
   * The bound ran out: the channel's failed reconnects (each a 'close') hold nothing more until
   * it is back (heard).
   */
  private outlasted = false;
  /** Jobs that wait to start until a gap is covered (startable). */
  private readonly startWaiters: Array<() => void> = [];

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  /**
   * Longer away than this, and Redis may have taken this worker's leases back: half a lease, and
   * half the heartbeat timeout (less, when beats are further apart than half of it: the last beat
   * may have come a whole interval before the gap).
   */
  private get awayMs(): number {
    const { settings, queue } = this.ctx;
    const hb = queue.options.heartbeatTimeoutMs;
    return Math.max(1, Math.min(settings.leaseMs / 2, hb / 2, hb - settings.heartbeatIntervalMs));
  }

  start(): void {
    // (Every third of the lease, however short: a floor above it let leases lapse between renewals.)
    const every = Math.max(1, Math.floor(this.ctx.settings.leaseMs / 3));
    this.timer = setInterval(() => void this.renew(), every);
    this.timer.unref();
    this.seen = performance.now();
    this.watch = setInterval(
      () => {
        if (this.lookedAway()) this.verify();
      },
      Math.max(25, Math.floor(this.awayMs / 4)),
    );
    this.watch.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    clearInterval(this.watch);
    clearTimeout(this.deafTimer);
  }

  /**
   * Whether a prefetched job may start now: not after a gap (see the head of this file) until a
   * renewal sent since answered; that renewal is then on its way, and refills once it answers.
   */
  mayStart(): boolean {
    const away = this.lookedAway();
    if (this.deaf) return false; // heard() verifies and refills
    if (!away) return true;
    this.verify();
    return false;
  }

  /**
   * As mayStart, for a job that was started and waited (for a sandbox: lib/sandbox/pool.ts)
   * through such a gap: undefined when it may start now, else the moment a renewal sent after
   * the gap answered (that renewal ends a run whose lease was lost: its signal aborts).
   */
  startable(): Promise<void> | undefined {
    if (this.mayStart()) return undefined;
    return new Promise((resolve) => this.startWaiters.push(resolve));
  }

  /**
   * A lease call sent at `sentAt` (performance.now()) answered with leases (new ones, or hand-offs
   * adopted), about to be placed. Sent before a gap ended, they were granted before it: Redis may
   * have taken them back meanwhile, and a renewal sent after the gap but before this answer was
   * read did not cover them. None starts until a renewal sent once they are placed says which are
   * ours (the next mayStart or watch tick sends it; not from here: they are not in the buffer yet).
   * True when so: the caller then holds refills until every one of them is placed (a slot freed
   * on the way would send that renewal before they are in the buffer).
   */
  answered(sentAt: number): boolean {
    this.lookedAway();
    if (sentAt >= this.lastGapAt) return false;
    this.awayAt = performance.now();
    return true;
  }

  deafened(): void {
    if (this.deaf || this.outlasted) return;
    this.deaf = true;
    // A channel that stays down while Redis answers the rest (e.g. maxclients refusing its new
    // connection) holds prefetched jobs no longer than this: they start after a renewal, as
    // before the channel existed (cancels are then learned at renewals).
    this.deafTimer = setTimeout(() => {
      this.outlasted = true;
      this.hear();
    }, DEAF_MAX_MS);
    this.deafTimer.unref();
  }

  heard(): void {
    this.outlasted = false;
    this.hear();
  }

  private hear(): void {
    if (!this.deaf) return;
    clearTimeout(this.deafTimer);
    this.deaf = false;
    this.awayAt = this.lastGapAt = performance.now();
    this.verify();
  }

  /** Note the loop running now; whether a gap is still to be covered. */
  private lookedAway(): boolean {
    const now = performance.now();
    if (this.watch !== undefined && now - this.seen > this.awayMs)
      this.awayAt = this.lastGapAt = now;
    this.seen = now;
    return this.awayAt !== undefined;
  }

  /** Renew now; once a renewal sent after the gap answered, start what is still ours. */
  private verify(): void {
    if (this.verifying) return;
    this.verifying = true;
    const sentAt = performance.now();
    void this.renew().then((ok) => {
      this.verifying = false;
      if (this.awayAt === undefined) return;
      // Failed: the next watch tick tries again.
      if (!ok) return;
      if (sentAt < this.awayAt) {
        // Sent before a later gap ended: one more.
        this.verify();
        return;
      }
      this.awayAt = undefined;
      for (const go of this.startWaiters.splice(0)) go();
      this.ctx.runs.refill();
    });
  }

  /**
   * Extend every held job's lease in one call; runs that lost theirs end as lost. True once Redis
   * answered (or there was nothing to renew).
   */
  async renew(): Promise<boolean> {
    const { runs, handoffs } = this.ctx;
    // Hand-offs not adopted yet are not ours to renew.
    const running = runs.runs().filter((r) => !handoffs.isUnadopted(r.lease.token));
    const waiting = runs.waiting().filter((l) => !handoffs.isUnadopted(l.token));
    if (running.length + waiting.length === 0) return true;
    const logs = new Map<Lease, LogBatch>();
    let settle: (() => void) | undefined;
    let out: Promise<void> | undefined;
    // At most CALL_UNITS of lines in a renewal (a longer string fails to build; the rest wait
    // for the next renewal or the outcome).
    let budget = CALL_UNITS;
    for (const r of running) {
      // One renewal at a time carries a run's lines: one that failed puts them back first.
      if (r.linesOut !== undefined) continue;
      const l = takeLogs(r, budget);
      if (!l) continue;
      for (const line of l.lines) budget -= lineUnits(line);
      logs.set(r.lease, l);
      r.linesOut = out ??= new Promise<void>((resolve) => (settle = resolve));
    }
    try {
      const ok = await this.ctx.queue.renew(
        [...running.map((r) => r.lease), ...waiting],
        this.ctx.settings.leaseMs,
        logs,
      );
      // Prefetched ones first (the last of `ok`): a running one that ends frees a slot, which
      // must not start a buffered job this answer says is lost.
      for (let i = ok.length - 1; i >= 0; i--) {
        const v = ok[i];
        if (v === true || v === undefined) continue;
        // A prefetched job may have started while the renewal was out: forget() ends its run
        // too (its signal aborts), not only the buffered lease.
        const token =
          i < running.length ? running[i]!.lease.token : waiting[i - running.length]!.token;
        if (v === false) {
          runs.forget(token, 'lease lost (expired and reclaimed)');
        } else {
          // Cancelled, and the notice missed (see Leases.extendOrAck): acknowledged once the
          // job can no longer start here, nor run on.
          runs.forget(token, 'job cancelled');
          this.ctx.cancels.acknowledge(v);
        }
      }
      return true;
    } catch (e) {
      // Not sent: the lines go with the next renewal or the outcome.
      for (const r of running) {
        const sent = logs.get(r.lease);
        if (!sent) continue;
        const later = r.logs;
        r.logs = later
          ? { lines: [...sent.lines, ...later.lines], dropped: sent.dropped + later.dropped }
          : sent;
      }
      this.ctx.report(e);
      return false;
    } finally {
      if (out !== undefined) {
        for (const r of running) if (r.linesOut === out) r.linesOut = undefined;
        settle!();
      }
    }
  }
}
