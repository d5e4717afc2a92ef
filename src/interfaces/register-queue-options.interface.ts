// The options of WorkQueueModule.registerQueue() and registerQueueAsync().
import type { FactoryProvider, ModuleMetadata } from '@nestjs/common';
import type { WorkQueueOptions } from '../../lib/index.js';
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

/** `WorkQueueModule.registerQueue({ name: 'emails', maxAttempts: 5 })`. */
export interface RegisterQueueOptions extends WorkQueueOverrides, WorkQueueQueueConnection {
  /** Queue name: 1-100 letters, digits, '.', '_', '-' or ':'. */
  name: string;
}

/** `WorkQueueModule.registerQueueAsync({ name, imports, inject, useFactory })`. */
export interface RegisterQueueAsyncOptions {
  name: string;
  imports?: ModuleMetadata['imports'];
  inject?: FactoryProvider['inject'];
  /** Receives the `inject` tokens' values; resolves the queue's overrides. */
  useFactory: (
    ...args: never[]
  ) =>
    | (WorkQueueOverrides & WorkQueueQueueConnection)
    | Promise<WorkQueueOverrides & WorkQueueQueueConnection>;
}
