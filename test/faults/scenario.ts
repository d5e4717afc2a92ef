/**
 * What a fault scenario sets: its workload, its workers and Redis, how its dead-lettered jobs and
 * its recovery are judged, and which targets it asserts. What it does to a run (inject,
 * finalChecks) is added by `Scenario` in ctx.ts, beside the run's context it gets.
 */
import type { WorkerOptions, WorkQueueOptions } from '../../lib/index.js';
import type { StartRedisOptions } from '../support/redis-server.js';
import type { Behavior } from './handler.js';
import type { Logs } from './logs.js';
import type { Fault, JobRec } from './records.js';

export interface ScenarioSettings {
  id: string;
  title: string;
  /** Report, do not assert (appendfsync everysec). */
  reportOnly?: boolean;
  jobs: number;
  /** Jobs per second the producers add. */
  rate: number;
  queues: string[];
  worker: 'core' | 'nest';
  redis: StartRedisOptions;
  /** The core's defaults for what is left out (the `defaults` scenario leaves out everything). */
  queueOptions: WorkQueueOptions;
  workerOptions: WorkerOptions;
  /** Nest workers: 300 ms unless set; 'default': the module's default. */
  shutdownTimeoutMs?: number | 'default';
  /** How long a dead worker's leases may stay before it is a violation (default 20 s). */
  leaseReleaseLimitMs?: number;
  /** A worker that exits by itself is a `crash` fault, and restarted (ctx.startSlot). */
  restartCrashed?: boolean;
  /**
   * Keep results (10 min): a stored result proves that a job's complete ran in Redis when the
   * process died (or lost its connection) before its `completed` event reached the log.
   */
  storeResults?: boolean;
  cidShare: number;
  bulkShare: number;
  cancelShare: number;
  behavior(r: () => number, i: number, n: number): { b: Behavior; ms: number };
  deadOk(reason: string, job: JobRec | undefined, faultsInLife: Fault[]): string | null;
  recoveryOf?(logs: Logs, jobs: JobRec[]): number[];
  /** What the recovery column measures. */
  recovery: string;
  drainTimeoutMs: number;
  /**
   * Who runs clean(): the orchestrator every 250 ms (default), or the Nest module's own cleaner
   * at its default interval (Nest workers only; the orchestrator then never cleans).
   */
  cleaner?: 'orchestrator' | 'module';
  /** Recovery = SIGKILL (ctx.kill9) → re-run of every job the worker held (deaths.ts). */
  heldRecovery?: boolean;
  /** Report dead-lettered bystanders (deaths.ts); jobs of these behaviours left out. */
  bystanders?: { exclude: Behavior[] };
  /** Violation: recovery p50 > 3 s or max > 5 s (with heldRecovery). */
  assertRecovery?: boolean;
  /** Violation: a dead-lettered bystander. */
  assertBystanders?: boolean;
  /** Violation: the slowest add→start over 5 s. */
  assertReconcile?: boolean;
  /** Violation: a producer add completed more than once. */
  assertNoDupAdds?: boolean;
  /** Violation: resume after a Redis restart p50 > 300 ms or max > 1 s (measure.ts). */
  assertResume?: boolean;
  /**
   * Violation: a job run again after a handler of the same attempt had ended, except where
   * that handler's process was SIGKILLed before its outcome could reach Redis (guarantee 11).
   */
  assertNoRerunAfterEnd?: boolean;
  /**
   * No worker process dies in this scenario: a job reclaimed from a worker judged dead (its
   * heartbeat lapsed, e.g. beats that came back too late after a restart) is a violation.
   */
  assertLiveWorkers?: boolean;
}
