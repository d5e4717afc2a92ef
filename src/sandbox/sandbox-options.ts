// A sandboxed @Processor() (`sandbox: { module, mode }`): its options' checks, and the core
// sandbox its worker runs — host.ts, given the processor's file, class and queue.
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ConsoleLogger, Logger, type LogLevel } from '@nestjs/common';
import {
  invalidOptions,
  sandboxOptionProblems,
  WorkQueueError,
  type Job,
  type SandboxOptions,
} from '../../lib/internal.js';
import type { ProcessorSandboxOptions } from '../interfaces/processor-options.interface.js';
import * as msg from '../work-queue.messages.js';
import {
  CANNOT_START_SANDBOX,
  sandboxBadModule,
  sandboxFileUnknown,
  sandboxNotObject,
} from './sandbox.messages.js';

/** What host.ts receives (its `setup`) in each sandbox. */
export interface HostData {
  /** The file that declares the processor class, as a `file:` URL. */
  readonly file: string;
  readonly className: string;
  readonly queueName: string;
  /**
   * The Nest log levels enabled in the main application: the sandbox's `Logger` logs at them once
   * its module booted (its bootstrap logs errors and warnings only).
   */
  readonly logLevels: LogLevel[];
}

const LOG_LEVELS: readonly LogLevel[] = ['verbose', 'debug', 'log', 'warn', 'error', 'fatal'];

/**
 * The main application's Nest log levels, for its sandboxes: its `logger` option's; without one,
 * its ConsoleLogger's (every level by default); errors and warnings when logging is off or another
 * logger is used (its levels are not known here). (Not `Logger.isLevelEnabled`: Nest 11's says
 * no to every level when no levels were set.)
 */
function mainLogLevels(): LogLevel[] {
  const nest = Logger as unknown as { logLevels?: LogLevel[]; staticInstanceRef?: unknown };
  if (Array.isArray(nest.logLevels)) return [...nest.logLevels];
  const main = nest.staticInstanceRef;
  if (main instanceof ConsoleLogger) return LOG_LEVELS.filter((l) => main.isLevelEnabled(l));
  return ['error', 'warn'];
}

const KEYS: Record<keyof ProcessorSandboxOptions, true> = {
  module: true,
  mode: true,
  poolSize: true,
  memoryLimitMb: true,
  execArgv: true,
  abortGraceMs: true,
  file: true,
};

const IN_SANDBOX = Symbol.for('nestjs-work-queue.sandbox');

/** This thread or process is a processor's sandbox: its application context runs no workers. */
export function insideSandbox(): boolean {
  return (globalThis as Record<symbol, unknown>)[IN_SANDBOX] === true;
}

export function markSandbox(): void {
  (globalThis as Record<symbol, unknown>)[IN_SANDBOX] = true;
}

/** host.ts beside this file (`.ts` from sources, `.js`/`.cjs` built). */
function hostFile(): URL {
  const here = import.meta.url;
  return new URL(`./host${here.slice(here.lastIndexOf('.'))}`, here);
}

/** A class, a dynamic module `{ module }`, or a forward reference `{ forwardRef }`. */
function isModule(m: unknown): boolean {
  if (typeof m === 'function') return true;
  if (typeof m !== 'object' || m === null) return false;
  const o = m as Record<string, unknown>;
  return typeof o.module === 'function' || typeof o.forwardRef === 'function';
}

const asUrl = (file: string | URL): string =>
  file instanceof URL || file.startsWith('file:') ? String(file) : pathToFileURL(file).href;

export function processorSandboxProblems(sandbox: unknown, at: string): string[] {
  if (typeof sandbox !== 'object' || sandbox === null || Array.isArray(sandbox))
    return [sandboxNotObject(at, msg.show(sandbox))];
  const o = sandbox as ProcessorSandboxOptions;
  const problems: string[] = [];
  for (const k of Object.keys(o))
    if (!KEYS[k as keyof ProcessorSandboxOptions])
      problems.push(msg.unknownOption(`${at}sandbox.`, k));
  if (!isModule(o.module)) problems.push(sandboxBadModule(at, msg.show(o.module)));
  if (o.file === undefined) problems.push(sandboxFileUnknown(at));
  const { mode, poolSize, memoryLimitMb, execArgv, abortGraceMs } = o;
  const core = {
    mode,
    poolSize,
    memoryLimitMb,
    execArgv,
    abortGraceMs,
    file: o.file ?? hostFile(),
  };
  problems.push(...sandboxOptionProblems(core, `${at}sandbox.`));
  return problems;
}

/** The core sandbox of a processor's worker: host.ts, set up with the processor to run. */
export function processorSandbox(
  queueName: string,
  className: string,
  sandbox: ProcessorSandboxOptions,
  wrapJob: ((job: Job) => Job) | undefined,
): SandboxOptions {
  const { mode, poolSize, memoryLimitMb, execArgv, abortGraceMs } = sandbox;
  const setupData: HostData = {
    file: asUrl(sandbox.file!),
    className,
    queueName,
    logLevels: mainLogLevels(),
  };
  return {
    file: fileURLToPath(hostFile()),
    mode,
    ...(poolSize !== undefined ? { poolSize } : {}),
    ...(memoryLimitMb !== undefined ? { memoryLimitMb } : {}),
    ...(execArgv !== undefined ? { execArgv } : {}),
    ...(abortGraceMs !== undefined ? { abortGraceMs } : {}),
    setupData,
    ...(wrapJob ? { wrapJob } : {}),
  };
}

/**
 * A processor's worker refused to start for its sandbox: each problem named by the processor (a
 * sandbox that ended, or was killed, as it booted says only which thread or process it was).
 */
export function byProcessor(e: unknown, queueName: string, classNames: readonly string[]): unknown {
  if (!(e instanceof WorkQueueError) || e.code !== 'INVALID_OPTIONS') return e;
  if (!e.message.startsWith('sandbox ')) return e;
  const at = msg.processorAt(queueName, classNames.join(', '));
  const named = e.problems.map((x) => (x.startsWith('@Processor(') ? x : at + x));
  return invalidOptions(CANNOT_START_SANDBOX, named);
}
