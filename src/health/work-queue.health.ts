// Terminus health indicator of the queues (nestjs-work-queue/health): readiness (Redis latency,
// version and eviction policy, per-queue counts, thresholds) and liveness (liveness-check.ts).
import { performance } from 'node:perf_hooks';
import { Injectable, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import {
  HealthIndicatorService,
  TerminusModule,
  type HealthIndicatorResult,
} from '@nestjs/terminus';
import { errorMessage, invalidOptions, type QueueCounts } from '../../lib/internal.js';
import { infos, summarize } from '../../lib/internal.js';
import { within } from '../../lib/internal.js';
import { WorkQueueContext } from '../work-queue.context.js';
import {
  evictionWarning,
  healthQueueNotRegistered,
  INVALID_LIVENESS_OPTIONS,
  INVALID_READINESS_OPTIONS,
  redisNoAnswer,
  redisStatusUnreachable,
  redisUnreachable,
  tooFewWorkers,
  tooManyDead,
  tooManyPending,
} from '../health/health.messages.js';
import {
  LivenessCheck,
  livenessOptionProblems,
  type WorkQueueLivenessDetails,
  type WorkQueueLivenessOptions,
} from './liveness-check.js';
import { UNREACHABLE_STATUSES } from './reachability.js';
import { readinessOptionProblems } from './health-options.js';

export interface WorkQueueHealthOptions {
  /** Queues to report and check (default: every registered queue). */
  queues?: string[];
  /** Down when a queue has more pending (waiting, not delayed) jobs than this. */
  maxPending?: number;
  /** Down when a queue's dead-letter set holds more jobs than this. */
  maxDead?: number;
  /**
   * Down when a queue has fewer live workers than this, counted across all instances (from
   * Redis): an instance that runs no worker itself (`workers: false`) is not down for that.
   */
  minWorkers?: number;
  /** Down when Redis does not answer within this many ms. Default 1 000. */
  timeoutMs?: number;
  /**
   * Down when Redis' `maxmemory-policy` is not `noeviction` (Redis may then evict queue keys and
   * lose jobs). Default false: the detail `evictionWarning` is set instead.
   */
  requireNoEviction?: boolean;
}

/**
 * Per-queue detail of a health check. `workers`: live workers of every instance; `localWorker`:
 * whether this instance runs one (see the `workers` module option). `paused`: the queue is
 * paused queue-wide (`queue.pause()`); a paused queue is reported as such, not as down.
 */
export type WorkQueueHealthCounts = Pick<
  QueueCounts,
  'pending' | 'delayed' | 'leased' | 'dead' | 'workers'
> & { localWorker: boolean; paused: boolean };

/** What `isHealthy()` reports when Redis answered. */
export interface WorkQueueHealthDetails extends Record<string, unknown> {
  latencyMs: number;
  redisVersion: string;
  maxmemoryPolicy: string;
  evictionWarning?: string;
  queues: Record<string, WorkQueueHealthCounts>;
  /** Why the indicator is down (thresholds crossed, unknown queues). */
  problems?: string[];
}

/**
 * Terminus health indicator for the queues (Terminus >= 11, `HealthIndicatorService`):
 *
 * ```ts
 * @Get('health/ready') @HealthCheck()
 * ready() {
 *   return this.health.check([() => this.queues.isHealthy('queues', { maxDead: 100 })]);
 * }
 * @Get('health/live') @HealthCheck()
 * live() {
 *   return this.health.check([() => this.queues.isAlive('queues')]);
 * }
 * ```
 *
 * `isHealthy` (readiness) reports Redis' ping latency, version and eviction policy, and per
 * queue the pending, delayed, leased and dead jobs, live workers and whether it is paused (a
 * paused queue stays up). Down when Redis does not answer within `timeoutMs` (never hangs the
 * endpoint) or a threshold is crossed. `isAlive` (liveness) is down only when a restart of this
 * process would help (see its comment).
 */
@Injectable()
export class WorkQueueHealthIndicator implements OnModuleInit, OnApplicationShutdown {
  private readonly liveness: LivenessCheck;

  constructor(
    private readonly health: HealthIndicatorService,
    private readonly context: WorkQueueContext,
  ) {
    this.liveness = new LivenessCheck(context);
  }

  /** Follow the queues' connections from the start (each queue is registered by now). */
  onModuleInit(): void {
    for (const q of this.context.queues) this.liveness.watch(q.client);
  }

  onApplicationShutdown(): void {
    this.liveness.detach();
  }

  /**
   * Liveness (a Kubernetes `livenessProbe`): down only when this process cannot do its work
   * and a restart would help — one of this instance's workers has had jobs pending in its queue
   * while its lease calls went unanswered for `stalledAfterMs` (default 30 s; a paused worker or
   * queue, a full worker, flow control and delayed jobs are not stalls), its heartbeat thread
   * died and no replacement has beaten for `stalledAfterMs`, or one of the module's connections
   * has not reached Redis for `stalledAfterMs` (a shorter outage stays up). An instance that runs
   * no worker is up while Redis is reachable. Every Redis call within `timeoutMs` (default 1 s).
   * Options that are not positive integers throw `INVALID_OPTIONS`, every problem listed.
   */
  async isAlive<const Key extends string>(
    key: Key,
    options: WorkQueueLivenessOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const problems = livenessOptionProblems(options);
    if (problems.length > 0) throw invalidOptions(INVALID_LIVENESS_OPTIONS, problems);
    const indicator = this.health.check(key);
    const details: WorkQueueLivenessDetails = await this.liveness.run(
      options.stalledAfterMs ?? 30_000,
      options.timeoutMs ?? 1_000,
    );
    return details.problems ? indicator.down(details) : indicator.up(details);
  }

  /** Readiness (see above). Bad options throw `INVALID_OPTIONS`, every problem listed. */
  async isHealthy<const Key extends string>(
    key: Key,
    options: WorkQueueHealthOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const problems = readinessOptionProblems(options);
    if (problems.length > 0) throw invalidOptions(INVALID_READINESS_OPTIONS, problems);
    const indicator = this.health.check(key);
    const timeoutMs = options.timeoutMs ?? 1_000;
    const status = this.context.client.status;
    if (UNREACHABLE_STATUSES.has(status)) {
      return indicator.down({ message: redisStatusUnreachable(status) });
    }
    let details: WorkQueueHealthDetails | undefined;
    try {
      details = await within(this.inspect(options), timeoutMs);
    } catch (e) {
      return indicator.down({ message: redisUnreachable(errorMessage(e)) });
    }
    if (!details) return indicator.down({ message: redisUnreachable(redisNoAnswer(timeoutMs)) });
    return details.problems ? indicator.down(details) : indicator.up(details);
  }

  private async inspect(options: WorkQueueHealthOptions): Promise<WorkQueueHealthDetails> {
    const problems: string[] = [];
    const names = options.queues ?? this.context.queues.map((q) => q.name);
    const queues = names.flatMap((name) => {
      const q = this.context.getQueue(name);
      if (!q) problems.push(healthQueueNotRegistered(name));
      return q ? [q] : [];
    });
    const client = this.context.client;
    const started = performance.now();
    await client.ping();
    const latencyMs = Math.round((performance.now() - started) * 10) / 10;
    const [info, counts, paused] = await Promise.all([
      queues[0]?.redisInfo() ?? infos(client).then(summarize),
      Promise.all(queues.map((q) => q.counts())),
      Promise.all(queues.map((q) => q.isPaused())),
    ]);
    const details: WorkQueueHealthDetails = {
      latencyMs,
      redisVersion: info.version,
      maxmemoryPolicy: info.maxmemoryPolicy,
      queues: {},
    };
    if (info.maxmemoryPolicy !== 'noeviction') {
      const warning = evictionWarning(info.maxmemoryPolicy);
      details.evictionWarning = warning;
      if (options.requireNoEviction) problems.push(warning);
    }
    queues.forEach((q, i) => {
      const c = counts[i]!;
      details.queues[q.name] = {
        pending: c.pending,
        delayed: c.delayed,
        leased: c.leased,
        dead: c.dead,
        workers: c.workers,
        localWorker: this.context.getWorker(q.name) !== undefined,
        paused: paused[i]!,
      };
      if (options.maxPending !== undefined && c.pending > options.maxPending)
        problems.push(tooManyPending(q.name, c.pending, options.maxPending));
      if (options.maxDead !== undefined && c.dead > options.maxDead)
        problems.push(tooManyDead(q.name, c.dead, options.maxDead));
      if (options.minWorkers !== undefined && c.workers < options.minWorkers)
        problems.push(tooFewWorkers(q.name, c.workers, options.minWorkers));
    });
    if (problems.length > 0) details.problems = problems;
    return details;
  }
}

/**
 * `imports: [TerminusModule, WorkQueueHealthModule]` provides `WorkQueueHealthIndicator`
 * (`WorkQueueModule.forRoot()` must be imported too). Equivalent: import `TerminusModule` and add
 * `WorkQueueHealthIndicator` to your module's providers.
 */
@Module({
  imports: [TerminusModule],
  providers: [WorkQueueHealthIndicator],
  exports: [WorkQueueHealthIndicator],
})
export class WorkQueueHealthModule {}
