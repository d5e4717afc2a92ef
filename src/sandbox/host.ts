// The module each sandbox of a sandboxed @Processor() runs (the core's sandbox loads it: see
// lib/sandbox/child.ts). Its setup imports the processor's file (which runs its decorators
// again here), boots `NestFactory.createApplicationContext(sandbox.module)` once, resolves the
// processor class from it, and maps job names to its @Process() methods as the main
// application's explorer does; each job then goes to its method. Teardown closes the context.
import {
  Logger,
  type DynamicModule,
  type INestApplicationContext,
  type Type,
} from '@nestjs/common';
import { MetadataScanner, NestFactory, Reflector } from '@nestjs/core';
import { errorMessage, invalidOptions, NonRetryableError, type Job } from '../../lib/internal.js';
import type { SandboxModule } from '../interfaces/processor-options.interface.js';
import { WorkQueueMetadataAccessor } from '../work-queue-metadata.accessor.js';
import * as msg from '../work-queue.messages.js';
import {
  CANNOT_START_SANDBOX,
  sandboxCycleHint,
  sandboxNotExported,
  sandboxNotProvided,
} from './sandbox.messages.js';
import { markSandbox, type HostData } from './sandbox-options.js';

type Method = (job: Job) => unknown;

/** This sandbox's processor: its application context, and its methods by job name. */
interface Hosted {
  readonly app: INestApplicationContext;
  readonly className: string;
  readonly named: ReadonlyMap<string, Method>;
  readonly catchAll: Method | undefined;
}

let hosted: Hosted | undefined;

type Resolved = Type<unknown> | DynamicModule;

/** The module a SandboxModule names (a lazy one loaded: an arrow function has no prototype). */
async function resolve(m: SandboxModule): Promise<Resolved> {
  if (typeof m === 'function')
    return m.prototype === undefined
      ? (m as unknown as () => Promise<Resolved>)()
      : (m as Type<unknown>);
  return 'forwardRef' in m ? (m.forwardRef as () => Resolved)() : m;
}

const moduleName = (m: Resolved): string => (typeof m === 'function' ? m : m.module).name;

/**
 * Why the processor's file could not be loaded, with the likely cause of an import cycle (the
 * module's file imports the processor's: each sandbox imports the processor's file first).
 */
function loadProblem(e: unknown, at: string, file: string): string {
  const cycle = /before initialization|is not defined|undefined/.test(errorMessage(e));
  return `${at}importing ${file} failed: ${errorMessage(e)}${cycle ? sandboxCycleHint : ''}`;
}

export async function setup(data: HostData): Promise<void> {
  markSandbox();
  const at = msg.processorAt(data.queueName, data.className);
  const accessor = new WorkQueueMetadataAccessor(new Reflector());
  let mod: Record<string, unknown>;
  try {
    mod = (await import(data.file)) as Record<string, unknown>;
  } catch (e) {
    throw invalidOptions(CANNOT_START_SANDBOX, [loadProblem(e, at, data.file)]);
  }
  const inner = typeof mod.default === 'object' && mod.default !== null ? mod.default : {};
  const target = [...Object.values(mod), ...Object.values(inner)].find(
    (c): c is abstract new () => object =>
      typeof c === 'function' &&
      c.name === data.className &&
      accessor.getProcessorMetadata(c)?.queueName === data.queueName,
  );
  if (!target) throw invalidOptions(CANNOT_START_SANDBOX, [sandboxNotExported(at, data.file)]);
  const module = await resolve(accessor.getProcessorMetadata(target)!.options.sandbox!.module);
  let app: INestApplicationContext;
  try {
    app = await NestFactory.createApplicationContext(module, {
      logger: ['error', 'warn'],
      abortOnError: false,
    });
  } catch (e) {
    // Named by its processor, not by this file (the sandbox's setup).
    throw invalidOptions(CANNOT_START_SANDBOX, [
      `${at}its sandbox module failed to boot: ${errorMessage(e)}`,
    ]);
  }
  // The jobs' logs as the main application's (Nest's own bootstrap lines left out above).
  Logger.overrideLogger(data.logLevels);
  let instance: object;
  try {
    instance = app.get(target);
  } catch (e) {
    await app.close();
    const problem = sandboxNotProvided(at, moduleName(module), errorMessage(e));
    throw invalidOptions(CANNOT_START_SANDBOX, [problem]);
  }
  const named = new Map<string, Method>();
  let catchAll: Method | undefined;
  const prototype = Object.getPrototypeOf(instance) as Record<string, unknown>;
  for (const name of new MetadataScanner().getAllMethodNames(prototype)) {
    const method = prototype[name];
    const process = accessor.getProcessMetadata(method);
    if (!process || typeof method !== 'function') continue;
    const call: Method = (job) => (method as Method).call(instance, job);
    if (process.name === undefined) catchAll = call;
    else named.set(process.name, call);
  }
  hosted = { app, className: data.className, named, catchAll };
}

/** A job goes to the method of its name, else to the catch-all (as in the main application). */
export default function handle(job: Job): unknown {
  const h = hosted!;
  const method = (job.name === undefined ? undefined : h.named.get(job.name)) ?? h.catchAll;
  if (!method) throw new NonRetryableError(msg.noHandler(job.name, [h.className]));
  return method(job);
}

export async function teardown(): Promise<void> {
  await hosted?.app.close();
}
