// Hand-off adoption: jobs an add handed straight to this parked worker (popped by its idle
// wait) start at once, and their leases are adopted (made ours in Redis) by the next lease call.
import type { LeasedJob } from '../types/index.js';
import type { WorkerContext } from './context.js';
import type { HandoffsPart } from './parts.js';

interface Deferred<X> {
  promise: Promise<X>;
  resolve(value: X): void;
}

function deferred<X>(): Deferred<X> {
  let resolve!: (value: X) => void;
  const promise = new Promise<X>((r) => (resolve = r));
  return { promise, resolve };
}

export class Handoffs<T, R> implements HandoffsPart<T> {
  /** Jobs handed off to this worker (popped from the wake list), to adopt in the next flush. */
  private adopting: LeasedJob<T>[] = [];
  /**
   * Handed-off jobs not adopted yet, by token, each with what its adoption will say (they are
   * not renewed, and their handlers' extend/progress wait: the lease is not ours yet).
   */
  private readonly unadopted = new Map<string, Deferred<boolean>>();
  /** Tokens of handed-off jobs that came while pausing or closing: released once adopted. */
  private readonly late = new Set<string>();
  /** Tokens of handed-off jobs that came too old to start at once: started once adopted. */
  private readonly held = new Set<string>();
  /** The idle wait took entries into the hand-off list since the last call: sweep it. */
  private sweep = false;

  constructor(private readonly ctx: WorkerContext<T, R>) {}

  /** Something for the next lease call to adopt or sweep. */
  get pending(): boolean {
    return this.adopting.length > 0 || this.sweep;
  }

  /** The idle wait took entries into our hand-off list: the next call sweeps it. */
  noteSweep(): void {
    this.sweep = true;
  }

  /** What the next lease call adopts and whether it sweeps (taken out of here). */
  take(): { adopt: LeasedJob<T>[]; sweep: boolean } {
    const taken = { adopt: this.adopting, sweep: this.sweep };
    this.adopting = [];
    this.sweep = false;
    return taken;
  }

  /** The call carrying them failed: adopt (and sweep) with the next one. */
  putBack(adopt: LeasedJob<T>[], sweep: boolean): void {
    this.adopting = adopt.concat(this.adopting);
    this.sweep ||= sweep;
  }

  isUnadopted(token: string): boolean {
    return this.unadopted.has(token);
  }

  /** Tokens of hand-offs not adopted yet. */
  tokens(): string[] {
    return [...this.unadopted.keys()];
  }

  /** Start this hand-off (out of the buffer) only once adopted (after the process was away). */
  startOnceAdopted(token: string): void {
    this.held.add(token);
  }

  /** Release this hand-off as soon as it is adopted (pausing or closing). */
  releaseLater(token: string): void {
    this.late.add(token);
  }

  /**
   * A job an add handed off to this parked worker: start it now, and adopt its lease in the
   * next flush (with the job's complete, when the handler is that quick); when pausing or
   * closing, adopt it only to release it. Adopting after the handler started keeps the round
   * trip out of the latency; the hand-off lease is as long as a lease (see add.lua), so a
   * handler that blocks the event loop first loses it no sooner than a regular lease.
   */
  receive(job: LeasedJob<T>): void {
    const ctx = this.ctx;
    // Cancelled before it reached us: never started (the sweep drops its entry).
    if (ctx.cancels.admitHandoff(job.token)) {
      this.adopting.push(job);
      this.unadopted.set(job.token, deferred<boolean>());
      // No slot for it (a wait that outlived its free slot; pausing, closing): adopted to go back
      // first in line, which wakes a worker that can start it — not buffered behind a run.
      if (!ctx.canStart) this.late.add(job.token);
      else if (this.stale(job)) this.held.add(job.token);
      else ctx.runs.place([job]);
    }
    ctx.loop.schedule();
  }

  /**
   * Whether a hand-off reached us so long after its add that this worker may have been taken for
   * dead meanwhile (its process frozen: a stopped container, a long pause) and the job given to
   * another: then it starts only once adopted, not at once (it could have completed elsewhere).
   * Its age in Redis time (the lease loop's estimate); a hand-off normally arrives within a
   * millisecond, far under half the heartbeat timeout.
   */
  private stale(job: LeasedJob<T>): boolean {
    const now = this.ctx.loop.redisNow();
    if (now === undefined || job.addedAt <= 0) return false;
    return now - job.addedAt > this.ctx.queue.options.heartbeatTimeoutMs / 2;
  }

  /** The lease call's answer for an adoption. */
  afterAdopt(lease: LeasedJob<T>, ok: boolean): void {
    this.unadopted.get(lease.token)?.resolve(ok);
    this.unadopted.delete(lease.token);
    const late = this.late.delete(lease.token);
    const held = this.held.delete(lease.token);
    if (!ok) {
      // Cancelled, or its hand-off lease lapsed and the job went back: not ours to finish.
      this.ctx.runs.forget(lease.token, 'hand-off lost before adoption (cancelled or reclaimed)');
    } else if (late || (held && (this.ctx.holding || this.ctx.closing))) {
      this.ctx.runs.giveBack([lease]);
    } else if (held) {
      this.ctx.runs.place([lease]);
    }
  }

  /** Resolves true at once for a lease that is ours; for a hand-off, once adopted (or not). */
  adopted(lease: LeasedJob<T>): Promise<boolean> | boolean {
    return this.unadopted.get(lease.token)?.promise ?? true;
  }

  /** close(): hand-offs the closing flush could not adopt are not ours (their lease lapses). */
  abandon(): void {
    for (const d of this.unadopted.values()) d.resolve(false);
  }
}
