// The run table: the one owner of a worker's jobs, the running ones (a slot each) and the
// prefetched ones (leased ahead, waiting in the buffer for a slot). Nothing else changes either.
//
// How a run ends: always through `end(run, outcome)`, once (later calls return false). It frees
// the slot at once (the next buffered job starts), whatever is still to be told to Redis:
//   completed  the handler returned; its complete goes out with the next lease call
//   failed     the handler threw; its fail is reported next (retried, dead, or lost)
//   timedOut   ran past `jobTimeoutMs`: the signal is aborted (before the slot is given away),
//              then it is reported like `failed`
//   lost       the lease is no longer ours (reclaimed, cancelled, completed elsewhere, hand-off
//              not adopted): the signal is aborted, 'leaseLost' emitted, the outcome ignored
//   abandoned  close() stopped waiting for it: the signal is aborted, close() releases the job
// A completed, failed or timed-out run stays *finishing* until Redis answered its outcome
// (`settled`): its lease is still ours, and a reconcile after a dropped connection must not give
// its job back as if it had not run (guarantee 11): the outcome is sent again instead.
//
// When a slot frees while the worker reads notices from its event channel (a cancel or a
// completion elsewhere ending a run), the buffered job starts only after every notice already
// received was read (`holdRefills`): one of them may cancel that very job.
import { performance } from 'node:perf_hooks';
import { WorkQueueError } from '../errors.js';
import { LimitHolds } from './limit-holds.js';
import type { LeasedJob } from '../types/index.js';
import type { WorkerContext } from './context.js';
import { createJob } from './job.js';
import type { Job } from '../types/job.js';
import type { Run, RunOutcome, RunTablePart } from './parts.js';

export class RunTable<T, R> implements RunTablePart<T> {
  /**
   * Runs in flight, by lease token (unique per lease). Not by job: a job whose lease was
   * reclaimed can be leased again by this same worker while its stale run still goes on.
   */
  private readonly running = new Map<string, Run<T>>();
  /** The live run of each job, by job number (a newer lease of the job replaces it). */
  private readonly bySeq = new Map<string, Run<T>>();
  /** Prefetched jobs waiting for a slot. */
  private buffer: LeasedJob<T>[] = [];
  /** Ended runs whose outcome Redis has not answered yet, by token (see the head of this file). */
  private readonly finishing = new Map<string, Run<T>>();
  /** Resolves `settledAll()` once nothing is finishing. */
  private readonly onSettled: Array<() => void> = [];
  /** Free slots are filled only once the notices being read are all handled (holdRefills). */
  private refillsHeld = false;
  /** The token of the suspect job we run alone, if any (see `soloHeld`). */
  private soloToken: string | undefined;
  /** Resolves `drained()` once nothing runs. */
  private onDrained: (() => void) | undefined;
  /** RateLimitErrors being told (or just told): see place(). */
  private readonly limitHolds: LimitHolds;

  constructor(private readonly ctx: WorkerContext<T, R>) {
    // (A lease call's second round trip, its payloads, is answered within its command timeout.)
    this.limitHolds = new LimitHolds(2 * ctx.queue.options.commandTimeoutMs);
  }

  /** Jobs whose handlers are running. */
  get active(): number {
    return this.running.size;
  }

  /** Jobs held: running and prefetched. */
  get held(): number {
    return this.running.size + this.buffer.length;
  }

  /** Running runs (none of them ended). */
  runs(): Run<T>[] {
    return [...this.running.values()];
  }

  /** Prefetched leases, in order. */
  waiting(): readonly LeasedJob<T>[] {
    return this.buffer;
  }

  /** Tokens of every lease held: running, finishing (outcome not answered yet) or prefetched. */
  tokens(): string[] {
    return [...this.running.keys(), ...this.finishing.keys(), ...this.buffer.map((l) => l.token)];
  }

  holds(token: string): boolean {
    return this.running.has(token) || this.buffer.some((l) => l.token === token);
  }

  /** The live run of job number `seq`. */
  runOfJob(seq: string): Run<T> | undefined {
    return this.bySeq.get(seq);
  }

  /** A suspect's solo run is still held (lease nothing meanwhile: see lease_jobs). */
  soloHeld(): boolean {
    const solo = this.soloToken;
    if (solo === undefined) return false;
    if (this.holds(solo)) return true;
    this.soloToken = undefined;
    return false;
  }

  /** Start leased jobs while slots are free; keep the rest in the prefetch buffer. */
  place(jobs: LeasedJob<T>[], sentAt = performance.now()): void {
    const { cancels, handoffs } = this.ctx;
    let back: LeasedJob<T>[] | undefined;
    for (const lease of jobs) {
      // Cancelled while its lease reply was on the way: never started (cancel.lua).
      if (cancels.has(lease.token)) continue;
      // Leased before Redis had a RateLimitError's hold (a call sent before the tell's answer
      // came: see LimitHolds): its jobs of a held group go back, unstarted.
      if (this.limitHolds.held(lease.group, sentAt)) {
        // (A hand-off is ours to give back only once adopted.)
        if (handoffs.isUnadopted(lease.token)) handoffs.releaseLater(lease.token);
        else (back ??= []).push(lease);
        continue;
      }
      if (lease.token.charCodeAt(0) === 115 /* 's' */) this.soloToken = lease.token;
      this.buffer.push(lease);
    }
    if (back) this.giveBack(back);
    this.fill();
    if (this.ctx.holding) void this.release();
  }

  /** Hold `group`'s lease replies (see place()) until the returned function is called. */
  holdForLimit(group: string | undefined): () => void {
    return this.limitHolds.hold(group);
  }

  /**
   * Notices of the event channel are being read: fill free slots only after every notice
   * received with them was handled. ioredis hands over the messages of one socket read one by
   * one, in the same turn; a slot freed by the first (a cancelled running job) would otherwise
   * start a buffered job whose own cancel is the next message. The refill runs in the event
   * loop's next check phase, after every socket read of this poll phase.
   */
  holdRefills(): void {
    if (this.refillsHeld) return;
    this.refillsHeld = true;
    setImmediate(() => {
      this.refillsHeld = false;
      this.fill();
    });
  }

  /**
   * A renewal sent after the process was away answered: start what is still ours. Hand-offs not
   * adopted yet were not in it (not ours to renew): they start once adopted, as a late one does.
   */
  refill(): void {
    const { handoffs } = this.ctx;
    this.keepWaiting((l) => {
      if (!handoffs.isUnadopted(l.token)) return true;
      handoffs.startOnceAdopted(l.token);
      return false;
    });
    this.fill();
  }

  /** Keep what `keep` says of the buffer; a lease left: a slot freed, no run ended: look again. */
  private keepWaiting(keep: (l: LeasedJob<T>) => boolean): void {
    const n = this.buffer.length;
    this.buffer = this.buffer.filter(keep);
    if (this.buffer.length < n) this.ctx.loop.schedule();
  }

  /**
   * Start buffered jobs while slots are free: not while pausing, closing or holding refills, nor
   * right after the process was away (lease-renewer.ts: a renewal first says what is still ours).
   */
  private fill(): void {
    const { ctx } = this;
    const max = ctx.settings.concurrency;
    while (this.buffer.length > 0 && this.running.size < max && !this.refillsHeld) {
      // (Asked before each start: a handler may block the loop before it returns to us.)
      if (ctx.holding || ctx.closing || !ctx.renewer.mayStart()) return;
      this.start(this.buffer.shift()!);
    }
  }

  /** Take a prefetched lease out of the buffer (cancelled, or its lease is gone). */
  drop = (token: string) => this.keepWaiting((l) => l.token !== token);

  /** The job leased with `token` is not ours: its run ends as lost, or it leaves the buffer. */
  forget(token: string, reason: string): void {
    const run = this.running.get(token);
    if (run) this.end(run, { kind: 'lost', reason });
    this.drop(token);
  }

  /** Give prefetched jobs back to the front of the queue (pause, close). */
  release(): Promise<unknown> {
    const leases = this.takeWaiting(undefined);
    if (leases.length === 0) return Promise.resolve();
    return this.ctx.track(this.ctx.queue.release(leases)).catch((e: unknown) => this.ctx.report(e));
  }

  /**
   * Take the prefetched jobs of `group` (undefined: all of them) out of the buffer, in order, to
   * be given back (a RateLimitError holds their group, or the queue; pause, close): none of them
   * starts. A handed-off job not adopted yet is released once it is (Handoffs.afterAdopt).
   */
  takeWaiting(group: string | undefined): LeasedJob<T>[] {
    const { handoffs } = this.ctx;
    const taken: LeasedJob<T>[] = [];
    this.keepWaiting((l) => {
      if (group !== undefined && l.group !== group) return true;
      if (handoffs.isUnadopted(l.token)) handoffs.releaseLater(l.token);
      else taken.push(l);
      return false;
    });
    return taken;
  }

  /**
   * Leases not to start (they came while pausing or closing, or a hand-off adopted after its
   * RateLimitError or a pause took it): released, those alone (not the buffer with them).
   */
  giveBack(leases: LeasedJob<T>[]): void {
    if (leases.length === 0) return;
    void this.ctx.track(this.ctx.queue.release(leases)).catch((e: unknown) => this.ctx.report(e));
  }

  /** Resolves once no handler runs. */
  drained(): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => (this.onDrained = resolve));
  }

  /** The run's signal, created on first read (aborted already if the run was). */
  signal(run: Run<T>): AbortSignal {
    if (!run.controller) {
      run.controller = new AbortController();
      if (run.abortReason !== undefined) run.controller.abort(run.abortReason);
    }
    return run.controller.signal;
  }

  /** End a run (see the head of this file); false if it had ended already. */
  end(run: Run<T>, outcome: RunOutcome): boolean {
    if (run.ended) return false;
    run.ended = true;
    if (outcome.kind === 'timedOut') this.abort(run, outcome.error);
    clearTimeout(run.timer);
    const token = run.lease.token;
    this.running.delete(token);
    if (outcome.kind === 'completed' || outcome.kind === 'failed' || outcome.kind === 'timedOut')
      this.finishing.set(token, run);
    if (this.bySeq.get(run.lease.seq) === run) this.bySeq.delete(run.lease.seq);
    if (this.buffer.length > 0) this.fill();
    if (this.running.size === 0) this.onDrained?.();
    if (outcome.kind === 'lost' || outcome.kind === 'abandoned') {
      this.abort(run, new WorkQueueError('LEASE_LOST', outcome.reason));
    }
    if (outcome.kind === 'lost') {
      this.ctx.emit('leaseLost', run.job, outcome.reason);
      this.ctx.loop.schedule();
    }
    return true;
  }

  /** Redis answered the outcome of a finishing run (or we stopped telling it): it is gone. */
  settled(run: Run<T>): void {
    if (this.finishing.get(run.lease.token) === run) this.finishing.delete(run.lease.token);
    if (this.finishing.size === 0) for (const resolve of this.onSettled.splice(0)) resolve();
  }

  /** Resolves once no run is finishing (every outcome answered, or given up). */
  settledAll(): Promise<void> {
    if (this.finishing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.onSettled.push(resolve));
  }

  private start(lease: LeasedJob<T>): void {
    // Every field from the start: one object shape per run, no property added later (each
    // would allocate: a run's `logs` and `finishedAt` are written on every run).
    const run: Run<T> = {
      lease,
      job: undefined as unknown as Job<T>,
      controller: undefined,
      abortReason: undefined,
      ended: false,
      timer: undefined,
      logs: undefined,
      linesOut: undefined,
      finishedAt: undefined,
    };
    run.job = createJob(this.ctx, run);
    // A run of the same job still here holds a lease that was reclaimed (this one replaced it).
    // Ended once this run holds its slot: the slot it frees is filled by the next buffered job.
    const stale = this.bySeq.get(lease.seq);
    this.bySeq.set(lease.seq, run);
    this.running.set(lease.token, run);
    if (stale) this.end(stale, { kind: 'lost', reason: 'lease lost (expired and reclaimed)' });
    this.ctx.runner.execute(run);
  }

  private abort(run: Run<T>, reason: unknown): void {
    if (run.controller) run.controller.abort(reason);
    else run.abortReason ??= reason;
  }
}
