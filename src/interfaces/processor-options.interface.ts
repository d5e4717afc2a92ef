// The options of @Processor(): the worker options the module does not manage itself.
import type { WorkerOptions } from '../../lib/internal.js';

/**
 * Worker options of one `@Processor()`: `concurrency`, `leaseMs`, `jobTimeoutMs`,
 * `idleTimeoutMs`, `heartbeatIntervalMs`. The module starts and closes workers itself, so
 * `autostart`, `closeTimeoutMs` (see the module's `shutdownTimeoutMs`) and `cleanIntervalMs` (the
 * module's cleaner cleans) are not accepted.
 */
export type ProcessorOptions = Omit<
  WorkerOptions,
  'autostart' | 'closeTimeoutMs' | 'cleanIntervalMs'
>;
