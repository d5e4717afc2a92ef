// The idle wait: with nothing to lease, the worker parks, blocking on its own Redis connection
// until an add wakes it (or hands it a job), the next delayed job is due, or the idle timeout.
import type { Cluster, Redis } from 'ioredis';
import { duplicate, endNow } from '../redis/connection.js';
import { MAX_TIMER_MS } from '../util/checks.js';
import { delay, within } from '../util/timeout.js';
import { CALL_TIMEOUT_MS, type WorkerContext } from './context.js';
import type { IdleWaitPart } from './parts.js';

export class IdleWait<T, R> implements IdleWaitPart {
  /** The blocking connection, ours alone. */
  private conn: Redis | Cluster | undefined;
  /** A wait is on. */
  waiting = false;
  /** Entries (wake-ups or hand-offs) the waits popped so far: see LeaseLoop.covered. */
  wakes = 0;
  /** The current wait's BLMOVE went out (before that, it waits for its connection). */
  private sent = false;
  /** Ends the current wait (see wait). */
  private stop: (() => void) | undefined;
  /** Ends the current wait when its connection drops (see wait). */
  private lost: (() => void) | undefined;
  /** Settles when the current wait is over: its BLMOVE answered or failed, or never sent. */
  private settled: Promise<unknown> | undefined;

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  /** Open the blocking connection (at the first wait: a worker busy from the start needs none). */
  private open(): Redis | Cluster {
    // A wait whose reply is lost must not be sent again: it could take a second entry while the
    // first sits unknown in our hand-off list (reconcile gives such entries back).
    this.conn = duplicate(this.ctx.queue.client, { autoResendUnfulfilledCommands: false });
    this.conn.on('error', () => {
      /* reconnects by itself; a wait it drops ends through 'close' */
    });
    this.conn.on('close', () => this.lost?.());
    return this.conn;
  }

  /** Take this worker off the parked list (pause, close): adds no longer hand it jobs. */
  unpark(): void {
    const ctx = this.ctx;
    if (ctx.id !== '0')
      void ctx.track(ctx.queue.unparkWorker(ctx.id)).catch((e: unknown) => ctx.report(e));
  }

  /**
   * Block on Redis until a wake-up, the next delayed job, or the idle timeout. Leasing goes on
   * meanwhile when slots free up; this only decides when to look again.
   */
  async wait(nextDue: number, now: number): Promise<void> {
    const { ctx } = this;
    if (ctx.closing) return;
    const conn = this.conn ?? this.open();
    this.waiting = true;
    this.sent = false;
    let timeout = ctx.settings.idleTimeoutMs;
    if (nextDue > 0) timeout = Math.max(1, Math.min(timeout, nextDue - now + 1));
    // Its bound (below) adds a call's timeout: both within the longest timer.
    timeout = Math.min(timeout, MAX_TIMER_MS - CALL_TIMEOUT_MS);
    // close() (or a reconcile) ends the wait at once: with Redis down, disconnecting does not
    // settle a BLMOVE that waits to be resent, and its timer would outlive the worker.
    const stopped = new Promise<false>((resolve) => {
      this.stop = () => resolve(false);
    });
    let over!: () => void;
    this.settled = new Promise<void>((resolve) => (over = resolve));
    try {
      // Not connected yet (opening, or reconnecting after a drop): the BLMOVE goes out only
      // once it is, never through the connection's offline queue — a reconcile could not take
      // back a wait queued there, which would pop an entry later, unknown to the reconcile.
      if (conn.status === 'ready' || (await this.connected(conn, stopped, timeout))) {
        this.sent = true;
        await this.blockingWait(conn, timeout, stopped);
      }
    } finally {
      this.waiting = false;
      this.sent = false;
      this.stop = undefined;
      this.lost = undefined;
      over();
    }
    if (!ctx.closing) ctx.loop.schedule();
  }

  /** Wait (at most `ms`) for the blocking connection to be ready; false if stopped or not. */
  private async connected(conn: Redis | Cluster, stopped: Promise<false>, ms: number) {
    // A connection of a lazy client connects at its first command: this is it.
    if (conn.status === 'wait') conn.connect().catch(() => undefined);
    let onReady!: () => void;
    const ready = new Promise<true>((resolve) => (onReady = () => resolve(true)));
    conn.once('ready', onReady);
    try {
      return (await within(Promise.race([ready, stopped]), ms)) === true;
    } finally {
      conn.off('ready', onReady);
    }
  }

  /** The wait itself: BLMOVE from the wake list into our hand-off list (hand-off.md). */
  private async blockingWait(
    conn: Redis | Cluster,
    timeout: number,
    stopped: Promise<false>,
  ): Promise<void> {
    const { ctx } = this;
    // The connection dropped: its wait is never answered nor sent again (no re-sending on this
    // connection), and it may have taken an entry we never saw.
    const dropped = new Promise<false>((resolve) => {
      this.lost = () => {
        ctx.loop.needReconcile = true;
        resolve(false);
      };
    });
    const answer = ctx.queue.waitForWork(conn, timeout, ctx.id).then(
      (got) => {
        if (got !== false) {
          ctx.handoffs.noteSweep();
          // Ours to act on only with a slot to start a job: else passed on (a hand-off goes
          // back first in line, see Handoffs.receive; a wake-up with the next call's sweep).
          if (ctx.canStart) this.wakes++;
          else if (got === true) ctx.loop.passOn = true;
        }
        if (typeof got === 'object') ctx.handoffs.receive(got);
        return true;
      },
      (e: unknown) => {
        // The wait's reply is lost: it may have taken an entry we never saw.
        ctx.loop.needReconcile = true;
        throw e;
      },
    );
    // A stop ends our waiting, not the BLMOVE: what it may still pop is received (or, with the
    // connection dropped, given back by the reconcile).
    const done = Promise.race([answer.catch(() => undefined), dropped]);
    try {
      const answered = await within(
        Promise.race([answer, stopped, dropped]),
        timeout + CALL_TIMEOUT_MS,
      );
      // No answer at all: the connection is half-dead. Reconnect it.
      if (answered === undefined && !ctx.closing) {
        ctx.loop.needReconcile = true;
        conn.disconnect(true);
      }
      // Stopped (a reconcile or close() cut the connection): the BLMOVE's end, or its reply
      // on its way, comes next.
      if (answered === false) await within(done, CALL_TIMEOUT_MS);
    } catch (e) {
      if (!ctx.closing) {
        ctx.report(e);
        await delay(200);
      }
    }
  }

  /**
   * Reconcile: end the current wait and await its end. A BLMOVE that went out is cut with its
   * connection (which reconnects by itself); one not sent yet never will be.
   */
  async cut(): Promise<void> {
    const conn = this.conn;
    if (this.waiting && this.sent && conn && conn.status !== 'end') conn.disconnect(true);
    else this.stop?.();
    if (this.settled) await within(this.settled, CALL_TIMEOUT_MS);
  }

  /**
   * close(): closing the connection ends a wait at once. An entry it took whose reply is lost
   * stays in our hand-off list, and leaving gives it back; a reply on its way is still read (a
   * hand-off it carries is then adopted and released).
   */
  async end(): Promise<void> {
    const waited = this.waiting && this.sent && this.conn?.status === 'ready';
    this.disconnect();
    this.stop?.();
    if (waited && this.settled) await within(this.settled, 1_000);
  }

  disconnect(): void {
    const conn = this.conn;
    if (conn && conn.status !== 'end') endNow(conn);
  }
}
