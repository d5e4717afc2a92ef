// WorkQueueModule: forRoot()/forRootAsync() (the global core) and registerQueue()/
// registerQueueAsync() (one provider per queue).
import { Module, type DynamicModule, type Provider } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import type {
  RegisterQueueAsyncOptions,
  RegisterQueueOptions,
} from './interfaces/register-queue-options.interface.js';
import type { RegisterFlowProducerOptions } from './interfaces/register-flow-producer-options.interface.js';
import { createFlowProducer } from './utils/create-flow-producer.util.js';
import { getFlowProducerToken } from './utils/get-flow-producer-token.util.js';
import { getQueueToken } from './utils/get-queue-token.util.js';
import { WorkQueueEventsExplorer } from './work-queue-events.explorer.js';
import { WorkQueueMetadataAccessor } from './work-queue-metadata.accessor.js';
import { WorkQueueCleaner } from './work-queue.cleaner.js';
import { WorkQueueContext } from './work-queue.context.js';
import { WorkQueueExplorer } from './work-queue.explorer.js';
import {
  ConfigurableWorkQueueModule,
  WORK_QUEUE_ASYNC_OPTIONS_TYPE,
  WORK_QUEUE_MODULE_OPTIONS,
  WORK_QUEUE_OPTIONS_TYPE,
} from './work-queue.module-definition.js';
import { WorkQueueQueueEvents } from './work-queue.queue-events.js';
import { invalidOptions } from '../lib/internal.js';
import {
  factoryNotFunction,
  factoryNotOptions,
  injectNotArray,
  registrationNotObject,
  INVALID_MODULE_OPTIONS,
  NO_FOR_ROOT,
  noAsyncOptions,
  noCreateMethod,
  show,
} from './work-queue.messages.js';
import { WorkQueueRegistrar } from './work-queue.registrar.js';
import { WorkQueueSchedules } from './work-queue.schedules.js';

const CORE_PROVIDERS: Provider[] = [
  WorkQueueContext,
  WorkQueueMetadataAccessor,
  WorkQueueExplorer,
  WorkQueueEventsExplorer,
  WorkQueueRegistrar,
  WorkQueueQueueEvents,
  WorkQueueCleaner,
  WorkQueueSchedules,
];
const CORE_EXPORTS = [WorkQueueContext, WorkQueueCleaner, WorkQueueSchedules];

/**
 * Redis work queues for Nest.
 *
 * - `WorkQueueModule.forRoot({ connection, prefix?, defaults?, ... })` (or `forRootAsync`) once,
 *   in the root module: a global module with the connection, the processors' workers and the
 *   cleaner.
 * - `WorkQueueModule.registerQueue({ name: 'emails' })` wherever a queue is injected
 *   (`@InjectQueue('emails')`) or consumed (`@Processor('emails')`); `schedules` declares its
 *   schedules, upserted at bootstrap (`pruneSchedules: true` removes the undeclared ones).
 */
@Module({})
export class WorkQueueModule extends ConfigurableWorkQueueModule {
  static forRoot(options: typeof WORK_QUEUE_OPTIONS_TYPE): DynamicModule {
    return withCore(super.forRoot(options));
  }

  static forRootAsync(options: typeof WORK_QUEUE_ASYNC_OPTIONS_TYPE): DynamicModule {
    const given = isOptionsObject(options) ? options : {};
    return withCore(checkedOptionsClass(super.forRootAsync(given), given, options));
  }

  /** Provides each queue under `getQueueToken(name)`, for `@InjectQueue(name)` and processors. */
  static registerQueue(...queues: RegisterQueueOptions[]): DynamicModule {
    const providers: Provider[] = queues.map((registration) => ({
      provide: getQueueToken(registrationName(registration)),
      useFactory: (context?: WorkQueueContext, schedules?: WorkQueueSchedules) => {
        // Every registration of this call first: the problems of each invalid one at once.
        rooted(context, schedules).checkRegistrations(queues);
        return schedules!.declare(context!.registerQueue(registration), registration);
      },
      inject: CORE_DEPENDENCIES,
    }));
    const names = queues.map(registrationName);
    return {
      module: WorkQueueModule,
      providers: [...providers, lateCheck(names)],
      exports: providers,
    };
  }

  /**
   * Provides a `FlowProducer` (docs/flows.md) on the module's connection and prefix under
   * `getFlowProducerToken(name)`, for `@InjectFlowProducer(name?)`.
   */
  static registerFlowProducer(...producers: RegisterFlowProducerOptions[]): DynamicModule {
    const list = producers.length > 0 ? producers : [{}];
    const providers: Provider[] = list.map(({ name, ...options }) => ({
      provide: getFlowProducerToken(name),
      useFactory: (context?: WorkQueueContext) => createFlowProducer(rooted(context), options),
      inject: [CORE_DEPENDENCIES[0]!],
    }));
    return { module: WorkQueueModule, providers, exports: providers };
  }

  /**
   * Like `registerQueue`, with options from a factory (e.g. from `ConfigService`). The factories
   * of one call run first; their results are checked together (every problem of each at once).
   */
  static registerQueueAsync(...queues: RegisterQueueAsyncOptions[]): DynamicModule {
    const call = ++asyncCalls;
    const names = queues.map(registrationName);
    const factoryTokens = names.map((name, i) => Symbol(`registerQueueAsync#${call}.${i}:${name}`));
    const checkedToken = Symbol(`registerQueueAsync#${call}:checked`);
    // (A registration of the wrong shape is said at bootstrap with the others' problems.)
    const shaped = queues.map((q): Partial<RegisterQueueAsyncOptions> =>
      isOptionsObject(q) ? q : {},
    );
    const factories: Provider[] = shaped.map(({ inject, useFactory }, i) => ({
      provide: factoryTokens[i]!,
      useFactory: (...args: unknown[]) =>
        typeof useFactory === 'function'
          ? (useFactory as (...a: unknown[]) => unknown)(...args)
          : NO_FACTORY,
      inject: Array.isArray(inject) ? inject : [],
    }));
    const shapeProblems = queues.map((q, i) =>
      !isOptionsObject(q)
        ? [registrationNotObject(show(q))]
        : typeof shaped[i]!.useFactory !== 'function'
          ? [factoryNotFunction(show(shaped[i]!.useFactory))]
          : shaped[i]!.inject !== undefined && !Array.isArray(shaped[i]!.inject)
            ? [injectNotArray(show(shaped[i]!.inject))]
            : [],
    );
    const checked: Provider = {
      provide: checkedToken,
      useFactory: (context: WorkQueueContext | undefined, ...results: unknown[]) => {
        // Without forRoot() the queue providers say so (and none is built when a test overrides
        // them all): nothing to check here then.
        if (!context) return undefined;
        const found = results.map((overrides, i) =>
          shapeProblems[i]!.length > 0
            ? shapeProblems[i]!
            : overrides === undefined || isOptionsObject(overrides)
              ? []
              : [factoryNotOptions(show(overrides))],
        );
        const registrations = results.map((overrides, i): RegisterQueueOptions => ({
          ...(isOptionsObject(overrides) ? overrides : {}),
          name: names[i]!,
        }));
        context.checkRegistrations(registrations, 'registerQueueAsync', found);
        return registrations;
      },
      inject: [CORE_DEPENDENCIES[0]!, ...factoryTokens],
    };
    const providers: Provider[] = names.map((name, i) => ({
      provide: getQueueToken(name),
      useFactory: (
        context: WorkQueueContext | undefined,
        schedules: WorkQueueSchedules | undefined,
        registrations: RegisterQueueOptions[] | undefined,
      ) => {
        const root = rooted(context, schedules);
        const registration = registrations![i]!;
        return schedules!.declare(
          root.registerQueue(registration, 'registerQueueAsync'),
          registration,
        );
      },
      inject: [...CORE_DEPENDENCIES, checkedToken],
    }));
    const imports = shaped.flatMap((q) => (Array.isArray(q.imports) ? q.imports : []));
    return {
      module: WorkQueueModule,
      imports,
      providers: [...factories, checked, ...providers, lateCheck(names)],
      exports: providers,
    };
  }
}

/**
 * What registerQueue() and registerFlowProducer() need from forRoot(): optional, so that a
 * missing forRoot() is our error with the fix, not Nest's unknown-dependency one.
 */
const CORE_DEPENDENCIES = [
  { token: WorkQueueContext, optional: true },
  { token: WorkQueueSchedules, optional: true },
];

/** The context of forRoot(), or the error that says to import it. */
function rooted(context: WorkQueueContext | undefined, ...more: unknown[]): WorkQueueContext {
  if (context && more.every((m) => m !== undefined)) return context;
  throw invalidOptions(INVALID_MODULE_OPTIONS, [NO_FOR_ROOT]);
}

/** Built with a registration's module: one built after the bootstrap says what will not run. */
const lateCheck = (names: readonly string[]): Provider => ({
  provide: Symbol(`registerQueue:${names.join(',')}:late`),
  useFactory: (schedules?: WorkQueueSchedules) => schedules?.registeredLate(names) ?? true,
  inject: [{ token: WorkQueueSchedules, optional: true }],
});

/** registerQueueAsync() calls so far: each call's private provider tokens are its own. */
let asyncCalls = 0;

const isOptionsObject = (v: unknown): v is object =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A registration's name as its token says it (a registration of the wrong shape: its check says so). */
const registrationName = (r: unknown): string => {
  const name: unknown = isOptionsObject(r) ? (r as { name?: unknown }).name : r;
  return typeof name === 'string' ? name : typeof name === 'symbol' ? '' : String(name);
};

/** What a registerQueueAsync factory provider gives when `useFactory` is no function. */
const NO_FACTORY = Symbol('no useFactory');

/**
 * forRootAsync's `useClass` / `useExisting`: Nest's provider calls the instance's `create()`;
 * one without it fails as our typed error naming the class, not as Nest's bare TypeError. Options
 * with none of `useFactory`, `useClass`, `useExisting` (or no object: `raw`) fail the bootstrap
 * as our typed error too, not as Nest's unknown dependency.
 */
function checkedOptionsClass(
  definition: DynamicModule,
  options: typeof WORK_QUEUE_ASYNC_OPTIONS_TYPE,
  raw: unknown,
): DynamicModule {
  const cls = options.useExisting ?? options.useClass;
  if (typeof options.useFactory === 'function') return definition;
  const replaced: Provider = cls
    ? {
        provide: WORK_QUEUE_MODULE_OPTIONS,
        useFactory: (factory: unknown) => {
          const create = (factory as { create?: unknown } | null)?.create;
          if (typeof create !== 'function')
            throw invalidOptions(INVALID_MODULE_OPTIONS, [noCreateMethod(nameOf(cls))]);
          return (create as () => unknown).call(factory);
        },
        inject: [cls],
      }
    : {
        provide: WORK_QUEUE_MODULE_OPTIONS,
        useFactory: () => {
          throw invalidOptions(INVALID_MODULE_OPTIONS, [noAsyncOptions(show(raw))]);
        },
      };
  const providers = (definition.providers ?? []).map((p) =>
    typeof p === 'object' && 'provide' in p && p.provide === WORK_QUEUE_MODULE_OPTIONS
      ? replaced
      : p,
  );
  return { ...definition, providers };
}

const nameOf = (token: unknown): string =>
  typeof token === 'function' && token.name ? token.name : String(token);

function withCore(definition: DynamicModule): DynamicModule {
  return {
    ...definition,
    global: true,
    imports: [...(definition.imports ?? []), DiscoveryModule],
    providers: [...(definition.providers ?? []), ...CORE_PROVIDERS],
    exports: [...(definition.exports ?? []), ...CORE_EXPORTS],
  };
}
