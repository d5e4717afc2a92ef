// The idle wait: with nothing to lease, the worker parks, blocking on its own Redis connection
// until an add wakes it (or hands it a job), the next delayed job is due, or the idle timeout.
import type { Cluster, Redis } from 'ioredis';
import { duplicate } from '../redis/connection.js';
import { delay, within } from '../util/timeout.js';
import { CALL_TIMEOUT_MS, type WorkerContext } from './context.js';
import type { IdleWaitPart } from './parts.js';

export class IdleWait<T, R> implements IdleWaitPart {
  /** The blocking connection, ours alone. */
  private conn: Redis | Cluster | undefined;
  /** A wait is on. */
  waiting = false;
  /** Ends the current wait (see wait). */
  private stop: (() => void) | undefined;
  /** Ends the current wait when its connection drops (see wait). */
  private lost: (() => void) | undefined;
  /** Settles when the current wait's BLPOP has answered (or failed). */
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
    let timeout = ctx.settings.idleTimeoutMs;
    if (nextDue > 0) timeout = Math.max(1, Math.min(timeout, nextDue - now + 1));
    // close() ends the wait at once: with Redis down, disconnecting does not settle a BLPOP
    // that waits to be resent, and its timer would outlive the worker by up to the timeout.
    const stopped = new Promise<false>((resolve) => {
      this.stop = () => resolve(false);
    });
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
        if (got !== false) ctx.handoffs.noteSweep();
        if (typeof got === 'object') ctx.handoffs.receive(got);
        return true;
      },
      (e: unknown) => {
        // The wait's reply is lost: it may have taken an entry we never saw.
        ctx.loop.needReconcile = true;
        throw e;
      },
    );
    this.settled = Promise.race([answer.catch(() => undefined), dropped]);
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
    } catch (e) {
      if (!ctx.closing) {
        ctx.report(e);
        await delay(200);
      }
    } finally {
      this.waiting = false;
      this.stop = undefined;
      this.lost = undefined;
    }
    if (!ctx.closing) ctx.loop.schedule();
  }

  /** Reconcile: cut the current wait (the connection reconnects) and await its answer. */
  async cut(): Promise<void> {
    const conn = this.conn;
    if (this.waiting && conn && conn.status !== 'end') conn.disconnect(true);
    if (this.settled) await within(this.settled, CALL_TIMEOUT_MS);
  }

  /**
   * close(): closing the connection ends a wait at once. An entry it took whose reply is lost
   * stays in our hand-off list, and leaving gives it back; a reply on its way is still read (a
   * hand-off it carries is then adopted and released).
   */
  async end(): Promise<void> {
    const waited = this.waiting && this.conn?.status === 'ready';
    this.disconnect();
    this.stop?.();
    if (waited && this.settled) await within(this.settled, 1_000);
  }

  disconnect(): void {
    const conn = this.conn;
    if (conn && conn.status !== 'end') conn.disconnect(false);
  }
}
