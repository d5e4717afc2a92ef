// The scheduled cleaner: runs queue.clean() for every registered queue on an interval, at
// most about once per interval across all instances of the application.
import { insideSandbox } from './sandbox/sandbox-options.js';
import { randomUUID } from 'node:crypto';
import {
  Injectable,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import {
  defaultCleanInterval,
  errorMessage,
  type CleanReport,
  type WorkQueue,
} from '../lib/internal.js';
import { within } from '../lib/internal.js';
import { WORK_QUEUE_MODULE_DEFAULTS } from './work-queue.constants.js';
import { WorkQueueContext } from './work-queue.context.js';
import { cleanerCleaned, cleanerQueueFailed } from './work-queue.messages.js';

/** What one cleaner round did for one queue. */
export interface CleanerRun {
  queue: string;
  /** False when another instance (or this one) cleaned this queue less than an interval ago. */
  ran: boolean;
  report?: CleanReport;
  /** Set when cleaning failed (the next round tries again). */
  error?: string;
}

const STOP_WAIT_MS = 2_000;

/**
 * Runs `queue.clean()` for every registered queue on an interval: reclaims expired leases and
 * the jobs of workers whose heartbeat lapsed, promotes due delayed jobs. However many instances
 * of the application run, each queue is cleaned at most about once per interval: a round first
 * takes the queue's guard key, `SET <prefix>:{<queue>}:cleaner <instanceId> NX PX <ttl>`, and
 * skips the queue when another instance holds it. The guard lives slightly less than the interval
 * (by a tenth of it, at most 200 ms) so that the instance that cleaned last is not locked out of
 * its own next round by the time the round trip took.
 *
 * Each queue is cleaned on its own: one whose Redis does not answer (a named connection down)
 * holds up no other. A failing clean is logged and the timer lives on; the timer is `unref`'d and
 * stops (waiting briefly for running cleans) before the connections close. `cleaner: false` turns
 * it off.
 */
@Injectable()
export class WorkQueueCleaner implements OnApplicationBootstrap, BeforeApplicationShutdown {
  /** Written into the guard key, to tell which instance cleaned last. */
  readonly instanceId = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  /** Each queue's clean in progress: a queue whose Redis does not answer holds up no other. */
  private readonly running = new Map<WorkQueue, Promise<CleanerRun>>();
  private interval = 0;
  /** Set by the shutdown hook: a bootstrap after it (app.close() during app.init()) starts nothing. */
  private stopped = false;

  constructor(private readonly context: WorkQueueContext) {
    context.onBootstrapFailure(() => this.beforeApplicationShutdown());
  }

  /** The interval in ms (0 while stopped or disabled). */
  get intervalMs(): number {
    return this.timer ? this.interval : 0;
  }

  onApplicationBootstrap(): void {
    const options = this.context.cleaner;
    const queues = this.context.queues;
    // (app.close() during app.init() may have run the shutdown hook first: start nothing then.
    // A processor's sandbox cleans nothing: the app does.)
    if (options === false || queues.length === 0 || this.stopped || insideSandbox()) return;
    // Often enough that a dead worker's jobs, or an expired lease, wait at most about a quarter
    // of a heartbeat timeout (or lease) more than necessary: recovery in seconds on defaults.
    this.interval = options.intervalMs ?? defaultCleanInterval(queues);
    this.timer = setInterval(() => void this.tick(), this.interval);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.timer = undefined;
    // (Not for a queue whose connection is down: its clean waits for Redis — until the module
    // closes the connection, or, on a client of yours, its commandTimeoutMs — and its failure,
    // after the shutdown began, is not logged.)
    const running = [...this.running].filter(([q]) => q.client.status === 'ready');
    if (running.length > 0) await within(Promise.all(running.map(([, run]) => run)), STOP_WAIT_MS);
  }

  /**
   * One round now: every registered queue whose guard this instance can take is cleaned.
   * Never rejects; failures are logged and reported per queue.
   */
  async runOnce(): Promise<CleanerRun[]> {
    return Promise.all(this.context.queues.map((queue) => this.clean(queue)));
  }

  /** A round from the timer: each queue whose previous clean ended is cleaned again. */
  private tick(): void {
    if (!this.timer) return;
    for (const queue of this.context.queues) {
      if (!this.running.has(queue)) void this.clean(queue);
    }
  }

  /** Clean `queue`, or join its clean in progress. */
  private clean(queue: WorkQueue): Promise<CleanerRun> {
    let run = this.running.get(queue);
    if (!run) {
      const interval = this.interval || WORK_QUEUE_MODULE_DEFAULTS.cleanerMaxIntervalMs;
      run = this.cleanQueue(queue, interval).finally(() => this.running.delete(queue));
      this.running.set(queue, run);
    }
    return run;
  }

  private async cleanQueue(queue: WorkQueue, interval: number): Promise<CleanerRun> {
    const log = this.context.logger;
    try {
      const report = await queue.cleanIfDue(interval, this.instanceId);
      if (!report) return { queue: queue.name, ran: false };
      const done = Object.entries(report).filter(([, n]) => n > 0);
      if (done.length > 0) log?.debug?.(cleanerCleaned(queue.name, done));
      return { queue: queue.name, ran: true, report };
    } catch (e) {
      const error = errorMessage(e);
      // (Once stopped, a round cut short by the shutdown — its connection closed — is no news.)
      if (!this.stopped) log?.warn(cleanerQueueFailed(queue.name, error));
      return { queue: queue.name, ran: false, error };
    }
  }
}
