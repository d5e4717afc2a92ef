// The sandbox pool: what a Worker runs when its handler is `{ file, mode }`. To the worker it is
// an ordinary handler (`handler(job)`: its lease, renewal, complete and fail stay as they are);
// each job runs in a free sandbox, one job per sandbox at a time. Sandboxes start when jobs need
// them (one at `start()`, which proves the module loads), are reused, and are replaced when
// one dies: its job fails (SANDBOX_DIED), the jobs in the other sandboxes are untouched.
import { errorMessage, invalidOptions, WorkQueueError } from '../errors.js';
import type { Job } from '../types/job.js';
import type { SandboxOptions } from '../types/sandbox.js';
import type { Handler } from '../types/worker.js';
import { MAX_TIMER_MS } from '../util/checks.js';
import { within } from '../util/timeout.js';
import { resolveSandboxOptions, SANDBOX_CLOSE_MS, type SandboxSettings } from './options.js';
import { Sandbox } from './sandbox.js';

const RESOLVED = Promise.resolve();
/** Sandboxes start() tries when each is killed from outside as it loads. */
const START_ATTEMPTS = 3;

/** Resolves once `signal` aborts (never when it does not). */
const aborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });

interface Waiter {
  resolve(box: Sandbox): void;
  reject(e: unknown): void;
}

export class SandboxPool<T, R> {
  /** The pool as the worker's handler. */
  readonly handler: Handler<T, R>;
  private readonly settings: SandboxSettings;
  private readonly boxes = new Set<Sandbox>();
  /** Sandboxes whose job aborted, still running it (its grace): not counted in `boxes`. */
  private readonly leaving = new Set<Sandbox>();
  private readonly idle: Sandbox[] = [];
  /** Sandboxes the pool no longer needs, closing. */
  private readonly retiring = new Set<Sandbox>();
  private readonly waiters: Waiter[] = [];
  private closed: Promise<void> | undefined;
  /** Sandboxes of start() killed from outside as they loaded (see start). */
  private startsKilled = 0;

  constructor(
    options: SandboxOptions,
    concurrency: number,
    /** Errors no job is there to fail with (a replacement that could not start). */
    private readonly report: (e: unknown) => void,
    /**
     * For a job that got its sandbox after waiting: undefined when it may start now, else when
     * it may (the worker's process was away meanwhile: lib/worker/lease-renewer.ts startable).
     */
    private readonly startable: () => Promise<void> | undefined = () => undefined,
  ) {
    this.settings = resolveSandboxOptions(options, concurrency);
    this.handler = (job) => this.run(job);
  }

  /**
   * Start the first sandbox and wait until its module is loaded and set up: a module that cannot
   * be loaded, has no default export or whose setup throws fails here (INVALID_OPTIONS), not at
   * the first job.
   */
  async start(): Promise<void> {
    if (this.boxes.size > 0) return;
    let box: Sandbox;
    try {
      box = this.spawn(true);
    } catch (e) {
      // Node refused to start it at all: a thread's execArgv it does not take is ours to fix.
      const problem = errorMessage(e);
      if ((e as { code?: unknown }).code === 'ERR_WORKER_INVALID_EXEC_ARGV')
        throw invalidOptions(`sandbox ${this.settings.file} cannot run jobs`, [problem]);
      throw new WorkQueueError('SANDBOX_DIED', `sandbox could not be started: ${problem}`);
    }
    try {
      await box.ready;
    } catch (e) {
      // (Refused or killed: it is gone — its process reaped — before start() says so.)
      await within(box.exited, SANDBOX_CLOSE_MS);
      const problems =
        e instanceof WorkQueueError && e.problems.length ? e.problems : [errorMessage(e)];
      // Killed from outside as it loaded: a crash, not a module that cannot run — again, up to
      // START_ATTEMPTS sandboxes in all (its worker would otherwise never start).
      if (box.killedFromOutside && ++this.startsKilled < START_ATTEMPTS && !this.closed) {
        this.report(new WorkQueueError('SANDBOX_DIED', `${problems.join('; ')}: starting another`));
        return this.start();
      }
      throw invalidOptions(`sandbox ${this.settings.file} cannot run jobs`, problems);
    }
  }

  /** Close every sandbox: each ends once its job has (its signal aborted), after its teardown. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      const error = new WorkQueueError('CLOSED', 'the worker closed its sandboxes');
      for (const w of this.waiters.splice(0)) w.reject(error);
      this.idle.length = 0;
      // Their jobs were aborted by the worker's close: each may take its grace to end them.
      const ms = Math.min(this.settings.abortGraceMs + SANDBOX_CLOSE_MS, MAX_TIMER_MS);
      const all = [...this.boxes, ...this.leaving, ...this.retiring];
      await Promise.all(all.map((b) => b.close(ms)));
    })();
    return this.closed;
  }

  private async run(job: Job<T>): Promise<R> {
    const box = await this.acquire(job.signal);
    // Got after a gap of the process (frozen, blocked): not before a renewal says its lease is
    // still ours — another worker may have run and completed it meanwhile (as a prefetched job).
    const wait = this.startable();
    if (wait) {
      await Promise.race([wait, aborted(job.signal)]);
      if (job.signal.aborted) {
        this.release(box);
        throw job.signal.reason as Error;
      }
    }
    // Its job aborted (timed out, cancelled, its lease lost), the worker gives its slot to the
    // next job at once; the sandbox may run on for abortGraceMs. It leaves the pool's count
    // meanwhile, so that next job gets another sandbox, not a wait that its own jobTimeoutMs
    // counts (a job that ignored its signal timed out the next one behind it too).
    const leave = () => this.leave(box);
    job.signal.addEventListener('abort', leave, { once: true });
    if (job.signal.aborted) leave(); // (aborted before this line: the listener never fires)
    try {
      const target = (this.settings.wrapJob?.(job as Job) ?? job) as Job;
      return (await box.run(job as Job, target)) as R;
    } finally {
      job.signal.removeEventListener('abort', leave);
      this.release(box);
    }
  }

  /** `box`'s job aborted: it no longer counts, and a waiting job gets a new sandbox. */
  private leave(box: Sandbox): void {
    if (!this.boxes.delete(box)) return;
    this.leaving.add(box);
    // Looked at once the current turn's aborts are done: a worker's close() aborts its runs one
    // by one, those waiting for a sandbox too (they leave the waiters), then closes the pool.
    void RESOLVED.then(() => {
      if (!this.closed && this.waiters.length > 0 && this.boxes.size < this.settings.size)
        this.spawn(false);
    });
  }

  /** A free sandbox: an idle one, a new one while there are fewer than `size`, else the next free. */
  private acquire(signal: AbortSignal): Promise<Sandbox> {
    if (this.closed) return Promise.reject(new WorkQueueError('CLOSED', 'the worker is closing'));
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    const box = this.idle.pop();
    if (box) return Promise.resolve(box);
    if (this.boxes.size < this.settings.size) this.spawn(false);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal.reason as Error);
      };
      const waiter: Waiter = {
        resolve: (b) => {
          signal.removeEventListener('abort', onAbort);
          resolve(b);
        },
        reject: (e) => {
          signal.removeEventListener('abort', onAbort);
          reject(e as Error);
        },
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** A sandbox is free again (its module loaded, or its job ended). */
  private release(box: Sandbox): void {
    // One that left (its job aborted) and ended within its grace rejoins.
    // (Not one terminated meanwhile, its grace over: its exit is on the way.)
    if (this.leaving.delete(box) && box.usable) this.rejoin(box);
    if (!box.usable || !this.boxes.has(box)) return; // it died (died() forgets it)
    if (this.closed) void box.close(SANDBOX_CLOSE_MS);
    else if (this.boxes.size > this.settings.size) {
      // One more than the pool's size (its replacement runs a job): it goes, waiting jobs or
      // not (they are the replacement's).
      this.retire(box);
    } else if (this.waiters.length > 0) this.waiters.shift()!.resolve(box);
    else this.idle.push(box);
  }

  /**
   * `box` ended its aborted job within its grace. If the pool is full without it, a replacement
   * that runs nothing yet (still starting, or idle) goes instead: the waiting job takes the
   * sandbox that is ready now, not one still loading its module (and no process is churned).
   */
  private rejoin(box: Sandbox): void {
    if (this.boxes.size >= this.settings.size) {
      const spare = [...this.boxes].find((b) => !b.started || this.idle.includes(b));
      if (spare) {
        const i = this.idle.indexOf(spare);
        if (i >= 0) this.idle.splice(i, 1);
        this.retire(spare);
      }
    }
    this.boxes.add(box);
  }

  /** Take `box` out of the pool and close it; the pool's close() waits for it too. */
  private retire(box: Sandbox): void {
    this.boxes.delete(box);
    this.retiring.add(box);
    void box.close(SANDBOX_CLOSE_MS).then(() => this.retiring.delete(box));
  }

  private spawn(probe: boolean): Sandbox {
    const box = new Sandbox(this.settings);
    this.boxes.add(box);
    box.ready.then(
      () => this.release(box),
      (e: unknown) => {
        // (Closing ends starting sandboxes too, and a spare dropped by rejoin() is no loss.)
        if (this.boxes.delete(box) && !probe && !this.closed) this.startFailed(e);
      },
    );
    void box.exited.then(() => this.died(box));
    return box;
  }

  /**
   * A sandbox started for waiting jobs could not start: the first waiting job fails with why
   * (so a module that keeps failing costs one attempt per start, never a stall), and another
   * sandbox starts for the others.
   */
  private startFailed(e: unknown): void {
    const error = new WorkQueueError(
      'SANDBOX_DIED',
      `a sandbox could not start: ${errorMessage(e)}`,
    );
    const waiter = this.waiters.shift();
    if (waiter) waiter.reject(error);
    else this.report(error);
    if (!this.closed && this.waiters.length > 0 && this.boxes.size < this.settings.size)
      this.spawn(false);
  }

  /** A sandbox that had started ended: forget it, and start its replacement. */
  private died(box: Sandbox): void {
    // (One that left was replaced when it left, if a job waited.)
    if (this.leaving.delete(box)) return;
    if (!box.started || !this.boxes.delete(box)) return;
    const i = this.idle.indexOf(box);
    if (i >= 0) this.idle.splice(i, 1);
    if (this.closed) return;
    try {
      this.spawn(false);
    } catch (e) {
      this.report(e);
    }
  }
}
