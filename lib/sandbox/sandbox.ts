// One sandbox: a worker thread or a forked process running child.ts, one job at a time. It
// answers the calls its job makes to the worker's real job, forwards the job's abort, and turns
// its death (exit, crash, out of memory, kill -9) into the failure of the job it was running.
import { errorMessage, invalidOptions, WorkQueueError } from '../errors.js';
import type { Job } from '../types/job.js';
import { SANDBOX_CLOSE_MS, sandboxEntry, type SandboxSettings } from './options.js';
import { within } from '../util/timeout.js';
import { fromThrown, toThrown, type FromSandbox, type ToSandbox } from './protocol.js';
import { jobFields, jobMethods } from './job-fields.js';
import { startProcess, startThread } from './spawn.js';
import { fromWire, toWire } from './wire.js';

/** The job methods bound to its lease: called after its run ended, they answer false. */
const LEASE_BOUND = new Set(['progress', 'extend', 'log', 'updateData']);
/**
 * Jobs of ended runs kept to answer their late calls as the worker's job would: the newest few
 * (each holds its payload; a call from an older run is refused with BAD_STATE).
 */
const ENDED_KEPT = 4;

/** The job a sandbox runs now. */
interface Current {
  readonly run: number;
  readonly job: Job;
  readonly signal: AbortSignal;
  readonly settle: (ok: boolean, value: unknown) => void;
}

export class Sandbox {
  /** 'thread 7', 'process 4242': for messages. */
  readonly label: string;
  /** Resolves once the module is loaded and its setup ran; rejects with why it could not. */
  readonly ready: Promise<void>;
  /** Resolves with why the sandbox ended, once it has. */
  readonly exited: Promise<string>;
  /** Its module is loaded: it runs jobs. */
  started = false;
  /** It has not ended. */
  alive = true;
  private current: Current | undefined;
  /** The jobs of its last ENDED_KEPT runs, by run. */
  private readonly ended = new Map<number, Job>();
  private runs = 0;
  private killedFor: string | undefined;
  /** Its process was killed by a signal not ours (an OOM killer, an operator): a crash. */
  killedFromOutside = false;
  private closing: Promise<void> | undefined;
  private readonly post: (m: ToSandbox) => void;
  private readonly stop: () => void;

  constructor(private readonly settings: SandboxSettings) {
    let onReady!: (problems: string[] | undefined) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      onReady = (problems) =>
        problems ? reject(invalidOptions('the sandbox could not start', problems)) : resolve();
    });
    this.ready.catch(() => undefined); // the pool looks at it
    let onExit!: (how: string) => void;
    this.exited = new Promise((resolve) => (onExit = resolve));
    const onMessage = (m: FromSandbox) => this.receive(m, onReady);
    // `reaped`: what else goes with it (a process sandbox's guard), before `exited` says gone.
    const ended = (how: string, reaped?: Promise<void>) => {
      const why = this.killedFor !== undefined ? `terminated (${this.killedFor})` : how;
      this.alive = false;
      if (!this.started) onReady([`the sandbox (${this.label}) ended before it was ready: ${why}`]);
      this.died(why);
      if (reaped) void within(reaped, SANDBOX_CLOSE_MS).then(() => onExit(why));
      else onExit(why);
    };
    const entry = sandboxEntry();
    const { execArgv, memoryLimitMb } = settings;
    if (settings.mode === 'thread') {
      const thread = startThread(entry, execArgv, memoryLimitMb);
      thread.unref();
      let error: unknown;
      thread.on('message', onMessage);
      thread.on('error', (e) => (error ??= e));
      thread.once('exit', (code) =>
        ended(`exited with code ${code}${error ? ` (${errorWithCode(error)})` : ''}`),
      );
      this.label = `thread ${thread.threadId}`;
      this.post = (m) => thread.postMessage(m);
      this.stop = () => void thread.terminate();
    } else {
      const { child, guardGone } = startProcess(entry, execArgv, memoryLimitMb);
      child.unref();
      child.channel?.unref();
      child.on('message', (m) => onMessage(fromWire<FromSandbox>(m)));
      child.on('error', (e) => {
        if (child.pid === undefined) ended(`could not be started (${errorMessage(e)})`);
      });
      child.once('exit', (code, signal) => {
        if (signal && this.killedFor === undefined) this.killedFromOutside = true;
        ended(signal ? `killed by ${signal}` : `exited with code ${code}`, guardGone);
      });
      this.label = `process ${child.pid ?? '(not started)'}`;
      this.post = (m) => {
        if (!child.connected) throw new WorkQueueError('SANDBOX_DIED', `${this.label} has exited`);
        child.send(toWire(m));
      };
      this.stop = () => void child.kill('SIGKILL');
    }
    // Never a start without end: a module or setup that does not finish is terminated. (Armed
    // once started: a thread Node refuses to start throws above, and left no timer behind.)
    const startTimer = setTimeout(() => {
      if (!this.started) this.kill(`not ready within ${settings.startTimeoutMs} ms`);
    }, settings.startTimeoutMs);
    startTimer.unref();
    void this.ready.then(
      () => clearTimeout(startTimer),
      () => clearTimeout(startTimer),
    );
    try {
      this.post({ t: 'init', file: settings.file, setupData: settings.setupData });
    } catch (e) {
      onReady([
        `the sandbox's setupData cannot cross to it (structured clone): ${errorMessage(e)}`,
      ]);
      this.kill('could not be initialised');
    }
  }

  /** Whether it runs a job now. */
  get busy(): boolean {
    return this.current !== undefined;
  }

  /**
   * Run `job` (its calls reach `target`, the job as the worker's handler would see it). When
   * `job.signal` aborts, the sandbox's signal aborts too; a sandbox still running
   * `abortGraceMs` later is terminated.
   */
  run(job: Job, target: Job): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const signal = job.signal;
      const run = ++this.runs;
      let grace: NodeJS.Timeout | undefined;
      const onAbort = () => {
        try {
          this.post({ t: 'abort', run, reason: toThrown(signal.reason) });
        } catch {
          // It is gone: its exit settles the run.
        }
        grace = setTimeout(
          () => this.kill(`still running ${this.settings.abortGraceMs} ms after its job aborted`),
          this.settings.abortGraceMs,
        );
      };
      const settle = (ok: boolean, value: unknown) => {
        clearTimeout(grace);
        this.ended.set(run, target);
        if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value!);
        signal.removeEventListener('abort', onAbort);
        this.current = undefined;
        if (ok) resolve(value);
        else reject(value as Error);
      };
      try {
        this.post({ t: 'run', run, job: jobFields(job), methods: jobMethods(target) });
      } catch (e) {
        reject(
          new WorkQueueError(
            'ENCODE_FAILED',
            `job ${job.id}: its data cannot cross the sandbox boundary (structured clone): ${errorMessage(e)}`,
          ),
        );
        return;
      }
      this.current = { run, job: target, signal, settle };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /** It may take a job: not ended, not being closed or terminated. */
  get usable(): boolean {
    return this.alive && this.killedFor === undefined && this.closing === undefined;
  }

  /** Ask it to end (its running job's end, then its teardown); terminated after `ms`. */
  close(ms: number): Promise<void> {
    this.closing ??= (async () => {
      try {
        this.post({ t: 'close' });
      } catch {
        // It is gone already.
      }
      const timer = setTimeout(() => this.kill(`did not close within ${ms} ms`), ms);
      await this.exited;
      clearTimeout(timer);
    })();
    return this.closing;
  }

  /** Terminate it now (its exit reports `why`). */
  kill(why: string): void {
    this.killedFor ??= why;
    this.stop();
  }

  private receive(m: FromSandbox, onReady: (problems: string[] | undefined) => void): void {
    if (m.t === 'ready' || m.t === 'refused') {
      this.started = m.t === 'ready';
      onReady(m.t === 'ready' ? undefined : m.problems);
      if (!this.started) this.kill('refused to start');
    } else if (m.t === 'done') {
      const c = this.current;
      if (c?.run === m.run) c.settle(m.ok, m.ok ? m.value : fromThrown(m.error));
    } else if (m.t === 'call') {
      void this.answer(m);
    }
  }

  /** A job method called in the sandbox, on the worker's job; the outcome goes back. */
  private async answer(m: Extract<FromSandbox, { t: 'call' }>): Promise<void> {
    const c = this.current;
    // A call of a run that ended goes to its job as in-process (lease-bound methods answer
    // false there): a rejection a fire-and-forget call would make unhandled ends the sandbox
    // and the next job it runs.
    const job = c?.run === m.run ? c.job : this.ended.get(m.run);
    let reply: ToSandbox;
    try {
      if (!job) {
        if (!LEASE_BOUND.has(m.method))
          throw new WorkQueueError('BAD_STATE', `job.${m.method}(): the job's run has ended`);
        reply = { t: 'reply', call: m.call, ok: true, value: false };
      } else {
        const fn = (job as unknown as Record<string, unknown>)[m.method];
        if (typeof fn !== 'function')
          throw new WorkQueueError('INVALID_ARGUMENT', `job.${m.method} is not a method`);
        const value: unknown = await (fn as (...a: unknown[]) => unknown).apply(job, m.args);
        reply = { t: 'reply', call: m.call, ok: true, value };
      }
    } catch (e) {
      reply = { t: 'reply', call: m.call, ok: false, error: toThrown(e) };
    }
    try {
      this.post(reply);
    } catch (e) {
      const error = new WorkQueueError(
        'ENCODE_FAILED',
        `job.${m.method}(): its result cannot cross the sandbox boundary: ${errorMessage(e)}`,
      );
      try {
        this.post({ t: 'reply', call: m.call, ok: false, error: toThrown(error) });
      } catch {
        // It is gone: its exit settles the run.
      }
    }
  }

  /** It ended: the job it ran fails (with its signal's reason if that was why it was killed). */
  private died(why: string): void {
    const c = this.current;
    if (!c) return;
    const error = c.signal.aborted
      ? c.signal.reason
      : new WorkQueueError(
          'SANDBOX_DIED',
          `job ${c.job.id}: its sandbox (${this.label}) died running it: ${why}`,
        );
    c.settle(false, error);
  }
}

/** An error's message, after its code when it has one (ERR_WORKER_OUT_OF_MEMORY: …). */
function errorWithCode(e: unknown): string {
  const code = (e as { code?: unknown } | null)?.code;
  return `${typeof code === 'string' ? `${code}: ` : ''}${errorMessage(e)}`;
}
