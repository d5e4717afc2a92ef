import type { FactoryProvider, ModuleMetadata } from '@nestjs/common';
import type { WorkQueueOptions } from '../../lib/index.js';

/** Per-queue overrides of the module's `prefix` and `defaults`. */
export type WorkQueueOverrides = Omit<WorkQueueOptions, 'logger'>;

/** `WorkQueueModule.registerQueue({ name: 'emails', maxAttempts: 5 })`. */
export interface RegisterQueueOptions extends WorkQueueOverrides {
  /** Queue name: 1-100 letters, digits, '.', '_', '-' or ':'. */
  name: string;
}

/** `WorkQueueModule.registerQueueAsync({ name, imports, inject, useFactory })`. */
export interface RegisterQueueAsyncOptions {
  name: string;
  imports?: ModuleMetadata['imports'];
  inject?: FactoryProvider['inject'];
  /** Receives the `inject` tokens' values; resolves the queue's overrides. */
  useFactory: (...args: never[]) => WorkQueueOverrides | Promise<WorkQueueOverrides>;
}
