import type { WorkerOptions } from '../../lib/index.js';

/**
 * Worker options of one `@Processor()`: `concurrency`, `leaseMs`, `jobTimeoutMs`,
 * `idleTimeoutMs`, `heartbeatIntervalMs`. The module starts and closes workers itself, so
 * `autostart` and `closeTimeoutMs` (see the module's `shutdownTimeoutMs`) are not accepted.
 */
export type ProcessorOptions = Omit<WorkerOptions, 'autostart' | 'closeTimeoutMs'>;
