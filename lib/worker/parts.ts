// The parts of a worker as the others see them: what each part offers the rest (the Worker's
// constructor wires the classes that implement these into the WorkerContext). Declared here, not
// taken from the classes, so that the parts and the context import this file and never each other.
import type { WorkQueueError } from '../errors.js';
import type { LogBatch } from '../job/logs.js';
import type { CompleteItem } from '../queue/index.js';
import type { Job, LeasedJob } from '../types/job.js';

/** A job this worker runs: its lease, its handle, and how it ends (see RunTable). */
export interface Run<T> {
  lease: LeasedJob<T>;
  job: Job<T>;
  /** Created when the handler first reads `job.signal` (most never do). */
  controller?: AbortController;
  abortReason?: unknown;
  /** Set by `end`: the run has left the table and its outcome is being told (or ignored). */
  ended: boolean;
  /** The `jobTimeoutMs` timer, if any. */
  timer?: NodeJS.Timeout;
  /** `job.log` lines not sent yet (they go with its next renewal or its outcome). */
  logs?: LogBatch;
  /**
   * A renewal carrying some of its lines is on its way: its outcome (with the rest) waits for it,
   * or could reach Redis first and end the lease those lines need (a renewal sent again with its
   * script's text after NOSCRIPT; one that failed gives its lines back).
   */
  linesOut?: Promise<void>;
  /** When its outcome was recorded (Redis ms): `job.finishedAt`. */
  finishedAt?: number;
}

/** How a run ended (see RunTable.end). */
export type RunOutcome =
  | { kind: 'completed' }
  | { kind: 'failed' }
  | { kind: 'timedOut'; error: WorkQueueError }
  | { kind: 'lost'; reason: string }
  | { kind: 'abandoned'; reason: string };

/** The one owner of running and prefetched jobs (run-table.ts). */
export interface RunTablePart<T> {
  /** Jobs running now. */
  readonly active: number;
  /** Jobs held: running and prefetched. */
  readonly held: number;
  runs(): Run<T>[];
  waiting(): readonly LeasedJob<T>[];
  tokens(): string[];
  holds(token: string): boolean;
  runOfJob(seq: string): Run<T> | undefined;
  soloHeld(): boolean;
  place(jobs: LeasedJob<T>[], sentAt?: number): void;
  holdForLimit(group: string | undefined): () => void;
  refill(): void;
  holdRefills(): void;
  settled(run: Run<T>): void;
  settledAll(): Promise<void>;
  drop(token: string): void;
  forget(token: string, reason: string): void;
  release(): Promise<unknown>;
  takeWaiting(group: string | undefined): LeasedJob<T>[];
  giveBack(leases: LeasedJob<T>[]): void;
  drained(): Promise<void>;
  signal(run: Run<T>): AbortSignal;
  end(run: Run<T>, outcome: RunOutcome): boolean;
}

/** Calls the handler and reports its outcome (runner.ts). */
export interface RunnerPart<T, R> {
  execute(run: Run<T>): void;
  /** `at`: the complete call's Redis time. */
  afterComplete(run: Run<T>, result: R, ok: boolean, at: number): void;
}

/** Complete-and-lease calls and prefetch (lease-loop.ts). */
export interface LeaseLoopPart<T, R> {
  /** Set after a dropped connection: the next flush reconciles first. */
  needReconcile: boolean;
  /** Set by the idle wait: the next call passes on a wake-up this worker cannot act on. */
  passOn: boolean;
  readonly prefetch: number;
  /** Redis time now (ms), from the last lease reply and this process's monotonic clock. */
  redisNow(): number | undefined;
  sampleJob(ms: number): void;
  complete(item: CompleteItem<R> & { run: Run<T> }): void;
  schedule(): void;
  stop(): void;
  flush(): Promise<void>;
}

/** Parking on Redis while idle (idle-wait.ts). */
export interface IdleWaitPart {
  readonly waiting: boolean;
  /** Entries (wake-ups or hand-offs) the idle waits popped so far. */
  readonly wakes: number;
  unpark(): void;
  wait(nextDue: number, now: number): Promise<void>;
  cut(): Promise<void>;
  end(): Promise<void>;
  disconnect(): void;
}

/** Adoption of jobs handed off to this worker (handoffs.ts, docs/internals/hand-off.md). */
export interface HandoffsPart<T> {
  readonly pending: boolean;
  noteSweep(): void;
  take(): { adopt: LeasedJob<T>[]; sweep: boolean };
  putBack(adopt: LeasedJob<T>[], sweep: boolean): void;
  isUnadopted(token: string): boolean;
  tokens(): string[];
  releaseLater(token: string): void;
  startOnceAdopted(token: string): void;
  receive(job: LeasedJob<T>): void;
  afterAdopt(lease: LeasedJob<T>, ok: boolean): void;
  adopted(lease: LeasedJob<T>): Promise<boolean> | boolean;
  abandon(): void;
}

/** Cancel notices (cancels.ts). */
export interface CancelsPart {
  has(token: string): boolean;
  admitHandoff(token: string): boolean;
  onEvent(message: string): void;
  /** Tell the canceller waiting on `ack` that its job never starts here (any more). */
  acknowledge(ack: string): void;
  /** A run's outcome was refused (its job gone): acknowledge a cancel of it we did not hear. */
  endedLost(token: string): void;
}

/** Renewal of running leases (lease-renewer.ts). */
export interface RenewerPart {
  start(): void;
  stop(): void;
  /**
   * Whether a prefetched job may start now (not right after the process was away, nor while
   * the notice channel is down).
   */
  mayStart(): boolean;
  /** As mayStart for a started job that waited: undefined, or when it may start. */
  startable(): Promise<void> | undefined;
  /**
   * A lease call sent at `sentAt` answered with leases: sent before the process was away, they
   * start only once a renewal sent after their answer says they are still ours.
   */
  answered(sentAt: number): boolean;
  /** The notice channel's connection dropped: notices sent meanwhile go unheard. */
  deafened(): void;
  /** Subscribed again: a renewal learns what was missed, then prefetched jobs may start. */
  heard(): void;
  /** True once Redis answered (or there was nothing to renew). */
  renew(): Promise<boolean>;
}

/** The queue-wide pause as this worker knows it (queue-pause.ts). */
export interface QueuePausePart {
  readonly paused: boolean;
  onEvent(message: string): boolean;
  fromReply(version: number): void;
  recheck(): void;
  stop(): void;
}
