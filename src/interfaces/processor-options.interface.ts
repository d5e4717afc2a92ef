// The options of @Processor(): the worker options the module does not manage itself, and the
// sandbox its jobs run in.
import type { DynamicModule, ForwardReference, Type } from '@nestjs/common';
import type { SandboxOptions, WorkerOptions } from '../../lib/internal.js';

/**
 * Worker options of one `@Processor()`: `concurrency`, `leaseMs`, `jobTimeoutMs`,
 * `idleTimeoutMs`, `heartbeatIntervalMs`, `prefetch`, and `sandbox`. The module starts and closes
 * workers itself, so `autostart`, `closeTimeoutMs` (see the module's `shutdownTimeoutMs`) and
 * `cleanIntervalMs` (the module's cleaner cleans) are not accepted.
 */
export interface ProcessorOptions extends Omit<
  WorkerOptions,
  'autostart' | 'closeTimeoutMs' | 'cleanIntervalMs'
> {
  /**
   * Run the processor's `@Process()` methods in worker threads or child processes, each with
   * its own Nest application context of `module` (docs/sandboxes.md).
   */
  sandbox?: ProcessorSandboxOptions;
}

/**
 * A Nest module for sandboxes: a class, a dynamic module, `forwardRef(() => TheModule)`, or an
 * arrow function loading it (`() => import('./images.module.js').then((m) => m.ImagesModule)`):
 * the way to name a module whose file imports the processor's file (docs/sandboxes.md).
 */
export type SandboxModule =
  | Type<unknown>
  | DynamicModule
  | ForwardReference<() => Type<unknown> | DynamicModule>
  | (() => Promise<Type<unknown> | DynamicModule>);

/**
 * Where a processor's jobs run: a pool of `mode` sandboxes, each booting
 * `NestFactory.createApplicationContext(module)` once and calling the processor class it
 * resolves there. Its other options are those of the core's sandboxes.
 */
export interface ProcessorSandboxOptions extends Pick<
  SandboxOptions,
  'mode' | 'poolSize' | 'memoryLimitMb' | 'execArgv' | 'abortGraceMs'
> {
  /**
   * The module each sandbox boots. It must provide the processor class, and import whatever
   * the processor needs (a `@Global()` module too): nothing of the main application is there.
   * When its file imports the processor's file, load it lazily (see SandboxModule).
   */
  module: SandboxModule;
  /**
   * The file that declares the processor class (a path or `file:` URL), which each sandbox
   * imports. Default: the file `@Processor()` was called from. Give it when that file is not
   * one a sandbox can import on its own (a bundle).
   */
  file?: string | URL;
}
