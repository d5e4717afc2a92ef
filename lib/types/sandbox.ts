/** Types of sandboxed handlers: a handler module run in worker threads or child processes. */
import type { Job } from './job.js';

/**
 * `thread`: a `node:worker_threads` thread of this process (starts in tens of ms, shares the
 * process's memory budget). `process`: a child process (`child_process.fork`: starts slower,
 * costs a whole Node runtime, survives anything its handler does to its own process).
 */
export type SandboxMode = 'thread' | 'process';

/**
 * The sandbox form of a Worker's handler: `new Worker(queue, { file, mode })`. The module at
 * `file` runs in a pool of sandboxes, one job at a time each; its default export is the handler,
 * called with a `Job` whose data crossed by structured clone (see docs/sandboxes.md).
 */
export interface SandboxOptions {
  /**
   * An absolute path or `file:` URL of the handler module. Its default export is the handler;
   * it may also export `setup(setupData)` (awaited once per sandbox before its first job) and
   * `teardown()` (awaited when the worker closes).
   */
  file: string | URL;
  mode: SandboxMode;
  /** Sandboxes at most. Default: the worker's `concurrency`, capped at the number of CPUs. */
  poolSize?: number;
  /**
   * Heap limit of each sandbox, in MB (`resourceLimits.maxOldGenerationSizeMb` of a thread,
   * `--max-old-space-size` of a process). A sandbox past it dies: its job fails. Default: Node's.
   */
  memoryLimitMb?: number;
  /**
   * Node options of each sandbox (e.g. a TypeScript loader, `--inspect=0`). Default: this
   * process's own (`process.execArgv`), as Node passes them to threads and forked processes,
   * less those that would run other code than the sandbox's (`-e`, `-p`, `--test`, `--watch`…).
   */
  execArgv?: readonly string[];
  /**
   * How long a sandbox may go on after its job's signal aborted (cancelled, timed out, lease
   * lost, worker closing) before it is terminated and replaced. Default 1 000 ms.
   */
  abortGraceMs?: number;
  /**
   * How long a sandbox may take to be ready (its module loaded, its `setup` run) before it is
   * terminated: `Worker.start()` then rejects, and a sandbox the pool adds later counts as one
   * that could not start. Default 30 000 ms.
   */
  startTimeoutMs?: number;
  /** Given to the module's `setup` export, if it has one (structured clone). */
  setupData?: unknown;
  /**
   * @internal The Nest module's seam: the job whose methods a sandbox's calls reach (it tells
   * the 'active' and 'progress' worker events of processors).
   */
  wrapJob?: (job: Job) => Job;
}
