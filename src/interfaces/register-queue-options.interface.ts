// The options of WorkQueueModule.registerQueue() and registerQueueAsync(): queue overrides,
// connection, and the queue's declared schedules.
import type { FactoryProvider, ModuleMetadata } from '@nestjs/common';
import type { ScheduleSpec, ScheduleTemplate, WorkQueueOptions } from '../../lib/internal.js';
import type { WorkQueueConnectionOptions } from './work-queue-module-options.interface.js';

/** Per-queue overrides of the module's `prefix` and `defaults`. */
export type WorkQueueOverrides = Omit<WorkQueueOptions, 'logger'>;

/** Where a queue's jobs live when not on the module's `connection` (give at most one). */
export interface WorkQueueQueueConnection {
  /** A named connection of `WorkQueueModule.forRoot({ connections: { [configKey]: ... } })`. */
  configKey?: string;
  /** A connection of this queue's own (owned and closed by the module unless `{ client }`). */
  connection?: WorkQueueConnectionOptions;
}

/**
 * One declared schedule: its id, the spec (`every` or `cron` + `tz`, `startAt`, `endAt`, `limit`,
 * `missed`, `missedAfterMs`) and the job each tick adds (`data`, `name`, `priority`,
 * `maxAttempts`, `backoff`, `skipIfRunning`), flat — `queue.upsertSchedule(id, spec, template)`.
 */
export type WorkQueueScheduleDeclaration<T = unknown> = { id: string } & ScheduleSpec &
  ScheduleTemplate<T>;

/** The schedules of a queue, upserted at application bootstrap (docs/schedules.md). */
export interface WorkQueueQueueSchedules {
  /** Validated with the module; upserted by every instance at bootstrap (idempotent). */
  schedules?: WorkQueueScheduleDeclaration[];
  /**
   * Remove, at bootstrap, every schedule of the queue in Redis that is not in `schedules` (also
   * those made with `queue.upsertSchedule`). Default false: they are kept.
   */
  pruneSchedules?: boolean;
}

/** Whether this instance runs the queue's worker. */
export interface WorkQueueQueueWorkers {
  /**
   * Run (`true`) or do not run (`false`) this queue's worker in this instance, whatever
   * `forRoot({ workers })` says. Default: as `forRoot({ workers })` says.
   */
  workers?: boolean;
}

/** What a queue registration may set besides its name. */
export type WorkQueueRegistration = WorkQueueOverrides &
  WorkQueueQueueConnection &
  WorkQueueQueueSchedules &
  WorkQueueQueueWorkers;

/** `WorkQueueModule.registerQueue({ name: 'emails', maxAttempts: 5 })`. */
export interface RegisterQueueOptions
  extends
    WorkQueueOverrides,
    WorkQueueQueueConnection,
    WorkQueueQueueSchedules,
    WorkQueueQueueWorkers {
  /** Queue name: 1-100 letters, digits, '.', '_', '-' or ':'. */
  name: string;
}

/** `WorkQueueModule.registerQueueAsync({ name, imports, inject, useFactory })`. */
export interface RegisterQueueAsyncOptions {
  name: string;
  imports?: ModuleMetadata['imports'];
  inject?: FactoryProvider['inject'];
  /** Receives the `inject` tokens' values; resolves the queue's overrides (and schedules). */
  useFactory: (...args: never[]) => WorkQueueRegistration | Promise<WorkQueueRegistration>;
}
