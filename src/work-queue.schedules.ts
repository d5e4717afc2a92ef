// Applies the schedules declared with registerQueue({ schedules, pruneSchedules }): upserted at
// application bootstrap by every instance (idempotent), undeclared ones removed only on request.
import { insideSandbox } from './sandbox/sandbox-options.js';
import { Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { WorkQueueMetadataAccessor } from './work-queue-metadata.accessor.js';
import { errorMessage, WorkQueueError, type WorkQueue } from '../lib/internal.js';
import { within } from '../lib/internal.js';
import type { RegisterQueueOptions } from './interfaces/register-queue-options.interface.js';
import { splitSchedule, type SplitSchedule } from './utils/validate-schedules.util.js';
import { WORK_QUEUE_MODULE_DEFAULTS } from './work-queue.constants.js';
import { WorkQueueContext } from './work-queue.context.js';
import {
  pruneFailed,
  registeredAfterBootstrap,
  scheduleFailed,
  schedulePruned,
  schedulesFailed,
  schedulesTimeout,
  schedulesWithoutCleaner,
  scheduleUpserted,
} from './work-queue.messages.js';

interface Declared {
  queue: WorkQueue;
  schedules: SplitSchedule[];
  prune: boolean;
}

/** Page size when listing the schedules in Redis to prune the undeclared ones. */
const LIST_PAGE = 100;

/**
 * The declared schedules of each queue, collected as the queues are registered (validated there:
 * a bad declaration fails the module's creation with every problem listed) and applied in
 * `onApplicationBootstrap`: each one upserted (unchanged ones write nothing, so every instance
 * doing it is safe), then, with `pruneSchedules: true`, the queue's other schedules removed. The
 * bootstrap fails with one error naming every schedule that could not be applied, or when Redis
 * does not answer within `startTimeoutMs` (like a worker's start).
 */
@Injectable()
export class WorkQueueSchedules implements OnApplicationBootstrap {
  private readonly declared = new Map<string, Declared>();
  /** The providers at bootstrap: one of a module loaded later with a processor is warned about. */
  private atBootstrap: WeakSet<object> | undefined;

  constructor(
    private readonly context: WorkQueueContext,
    private readonly discovery: DiscoveryService,
    private readonly accessor: WorkQueueMetadataAccessor,
  ) {}

  /**
   * @internal Called as a registerQueue() module is built: once past the bootstrap (a module
   * loaded by LazyModuleLoader, whose hooks Nest does not call), its processors, listeners and
   * schedules will not run — said once its providers are built (a turn later).
   */
  registeredLate(names: readonly string[]): void {
    const before = this.atBootstrap;
    if (!before || insideSandbox()) return;
    setTimeout(() => this.sayMissed(before, names), 0).unref();
  }

  private sayMissed(before: WeakSet<object>, names: readonly string[]): void {
    const missed: string[] = [];
    for (const { instance } of this.discovery.getProviders()) {
      if (typeof instance !== 'object' || instance === null || before.has(instance)) continue;
      const cls = (instance as object).constructor;
      const meta =
        this.accessor.getProcessorMetadata(cls) ??
        this.accessor.getQueueEventsListenerMetadata(cls);
      if (meta && names.includes(meta.queueName)) missed.push(cls.name);
    }
    for (const name of names)
      if ((this.declared.get(name)?.schedules.length ?? 0) > 0)
        missed.push(`the schedules of "${name}"`);
    if (missed.length > 0) this.context.logger?.warn(registeredAfterBootstrap(names, missed));
  }

  /**
   * @internal Called by the queue providers with each validated registration; a queue
   * registered twice has the same options both times (WorkQueueContext checks it).
   */
  declare(queue: WorkQueue, registration: RegisterQueueOptions): WorkQueue {
    const { schedules = [], pruneSchedules = false } = registration;
    if (schedules.length > 0 || pruneSchedules) {
      this.declared.set(queue.name, {
        queue,
        schedules: schedules.map(splitSchedule),
        prune: pruneSchedules,
      });
    }
    return queue;
  }

  async onApplicationBootstrap(): Promise<void> {
    this.atBootstrap = new WeakSet(
      this.discovery
        .getProviders()
        .flatMap(({ instance }) =>
          typeof instance === 'object' && instance !== null ? [instance as object] : [],
        ),
    );
    if (insideSandbox()) return; // (a processor's sandbox: the app applies them)
    const withSchedules = [...this.declared.values()].filter((d) => d.schedules.length > 0);
    if (withSchedules.length > 0 && this.context.cleaner === false) {
      this.context.logger?.warn(schedulesWithoutCleaner(withSchedules.map((d) => d.queue.name)));
    }
    try {
      await Promise.all([...this.declared.values()].map((d) => this.applyWithin(d)));
    } catch (e) {
      this.context.bootstrapFailed();
      throw e;
    }
  }

  /** Apply one queue's declarations, failing with REDIS_UNAVAILABLE after `startTimeoutMs`. */
  private async applyWithin(d: Declared): Promise<void> {
    const ms = WORK_QUEUE_MODULE_DEFAULTS.startTimeoutMs;
    const client = d.queue.client;
    let lastError: string | undefined;
    const onError = (e: unknown) => {
      lastError = errorMessage(e);
    };
    client.on('error', onError);
    try {
      const applying = this.apply(d);
      // Still running after a timeout: its failure (e.g. the app closing the connection) is moot.
      applying.catch(() => undefined);
      const done = await within(
        applying.then(() => true),
        ms,
      );
      if (!done) {
        throw new WorkQueueError(
          'REDIS_UNAVAILABLE',
          schedulesTimeout(d.queue.name, ms, lastError),
        );
      }
    } finally {
      client.off('error', onError);
    }
  }

  private async apply({ queue, schedules, prune }: Declared): Promise<void> {
    const log = this.context.logger;
    const failures: string[] = [];
    let code: WorkQueueError['code'] | undefined;
    const fail = (problem: string, e: unknown) => {
      failures.push(problem);
      code ??= e instanceof WorkQueueError ? e.code : undefined;
    };
    await Promise.all(
      schedules.map(async ({ id, spec, template }) => {
        try {
          const outcome = await queue.upsertSchedule(id, spec, template);
          const line = scheduleUpserted(queue.name, id, outcome);
          if (outcome === 'unchanged') log?.debug?.(line);
          else log?.log(line);
        } catch (e) {
          fail(scheduleFailed(id, errorMessage(e)), e);
        }
      }),
    );
    // Never prune after a failed upsert: the declared state is not in Redis yet.
    if (prune && failures.length === 0) {
      try {
        await this.prune(queue, new Set(schedules.map((s) => s.id)));
      } catch (e) {
        fail(pruneFailed(errorMessage(e)), e);
      }
    }
    if (failures.length > 0) {
      const title = schedulesFailed(queue.name);
      throw new WorkQueueError(
        code ?? 'SCRIPT_ERROR',
        `${title}:\n  - ${failures.join('\n  - ')}`,
        failures,
      );
    }
  }

  /** Remove the schedules of `queue` not in `keep` (every id read first, then removed). */
  private async prune(queue: WorkQueue, keep: ReadonlySet<string>): Promise<void> {
    const ids: string[] = [];
    for (let offset = 0; ; offset += LIST_PAGE) {
      const page = await queue.listSchedules({ offset, limit: LIST_PAGE });
      ids.push(...page.map((s) => s.id));
      if (page.length < LIST_PAGE) break;
    }
    for (const id of ids.filter((i) => !keep.has(i))) {
      // False when another instance removed it first: the outcome is the same.
      if (await queue.removeSchedule(id)) this.context.logger?.log(schedulePruned(queue.name, id));
    }
  }
}
