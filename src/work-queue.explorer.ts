// Finds the @Processor() classes and their @Process() methods at bootstrap, and groups them
// by queue for the registrar. Internal: not exported from the package.
import { getQueueToken } from './utils/get-queue-token.util.js';
import { Injectable } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import { WorkQueue, type Job } from '../lib/internal.js';
import type { ProcessorOptions } from './interfaces/processor-options.interface.js';
import { heartbeatIntervalProblem, invalidOptions } from '../lib/internal.js';
import { processorOptionProblems } from './utils/validate-options.util.js';
import { WorkQueueMetadataAccessor } from './work-queue-metadata.accessor.js';
import { WorkQueueContext } from './work-queue.context.js';
import {
  badJobName,
  badProcessorQueue,
  CANNOT_START_PROCESSORS,
  conflictingOption,
  handlerName,
  noProcessMethod,
  notSingleton,
  processorAt,
  processorFoundTwice,
  queueNotRegistered,
  queueOverridden,
  twoCatchAlls,
  twoNamedHandlers,
} from './work-queue.messages.js';
import { sandboxShared } from './sandbox/sandbox.messages.js';

/** One `@Process()` method, bound to its instance. */
export interface ProcessHandler {
  readonly className: string;
  readonly methodName: string;
  invoke(job: Job): unknown;
}

/** Everything that consumes one queue: one worker runs it. */
export interface QueueProcessor {
  readonly queue: WorkQueue;
  /** The `@Processor()` classes of this queue (usually one). */
  readonly classNames: readonly string[];
  /** Worker options merged from those classes (without the module defaults). */
  readonly options: ProcessorOptions;
  /** `@Process('name')` methods by job name. */
  readonly named: ReadonlyMap<string, ProcessHandler>;
  /** The `@Process()` method: unnamed jobs and names without a method of their own. */
  readonly catchAll: ProcessHandler | undefined;
  /** The instances of those classes (their worker drains when Nest destroys the first). */
  readonly instances: readonly object[];
}

type Wrapper = ReturnType<DiscoveryService['getProviders']>[number];

interface Draft {
  queueName: string;
  queue: WorkQueue | undefined;
  classNames: string[];
  /** The classes found (two classes may share a name: one found twice is refused). */
  classes: unknown[];
  instances: object[];
  options: Record<string, unknown>;
  optionOwner: Record<string, string>;
  named: Map<string, ProcessHandler>;
  catchAll: ProcessHandler | undefined;
  /** Classes with only @OnWorkerEvent() methods: fine beside a class that processes jobs. */
  listenersOnly: string[];
}

/**
 * Finds `@Processor()` providers and their `@Process()` methods, in every module, whether they
 * were registered with `useClass`, `useFactory` or `useValue` (the metadata is read from the
 * instance's class). Request-scoped (durable or not) and transient processors, and processors that
 * depend on a request-scoped provider, fail the bootstrap, all listed: a worker runs for the whole
 * application, not per request, and a queue must never be left without its worker.
 *
 * Several `@Processor()` classes may consume one queue: they then share ONE worker, so their job
 * names must not overlap, at most one of them may have a catch-all `@Process()`, and their worker
 * options must agree. Anything else fails the bootstrap with every problem listed.
 */
@Injectable()
export class WorkQueueExplorer {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: WorkQueueMetadataAccessor,
    private readonly context: WorkQueueContext,
  ) {}

  explore(): QueueProcessor[] {
    const problems: string[] = [];
    const drafts = new Map<string, Draft>();
    const seen = new Set<unknown>();
    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.isAlias) continue; // useExisting: the same instance is found under its own token
      const target = this.targetOf(wrapper);
      const meta = this.accessor.getProcessorMetadata(target);
      if (!meta || typeof target !== 'function') continue;
      const className = target.name || '(anonymous class)';
      if (wrapper.isTransient || !wrapper.isDependencyTreeStatic()) {
        problems.push(notSingleton(processorAt(meta.queueName, className), wrapper.isTransient));
        continue;
      }
      const instance: unknown = wrapper.instance;
      if (typeof instance !== 'object' || instance === null || seen.has(instance)) continue;
      seen.add(instance);
      this.addProcessor(drafts, className, meta.queueName, meta.options, instance, problems);
    }
    for (const d of drafts.values()) {
      if (d.options.sandbox !== undefined && d.classNames.length > 1)
        problems.push(sandboxShared(d.queueName, d.classNames));
      // A queue's processor classes with worker-event listeners only, and none that processes.
      if (d.catchAll === undefined && d.named.size === 0)
        for (const c of d.listenersOnly)
          problems.push(noProcessMethod(processorAt(d.queueName, c)));
    }
    if (problems.length > 0) {
      throw invalidOptions(CANNOT_START_PROCESSORS, problems);
    }
    return [...drafts.values()].map((d) => ({
      queue: d.queue!,
      classNames: d.classNames,
      options: d.options as ProcessorOptions,
      named: d.named,
      catchAll: d.catchAll,
      instances: d.instances,
    }));
  }

  /** The class whose metadata describes this provider. */
  private targetOf(wrapper: Wrapper): unknown {
    if (!wrapper.isNotMetatype) return wrapper.metatype; // useClass (or a plain class provider)
    const instance: unknown = wrapper.instance; // useFactory / useValue: the instance's class
    return typeof instance === 'object' && instance !== null ? instance.constructor : undefined;
  }

  private addProcessor(
    drafts: Map<string, Draft>,
    className: string,
    queueName: string,
    options: ProcessorOptions,
    instance: object,
    problems: string[],
  ): void {
    const at = processorAt(queueName, className);
    if (typeof queueName !== 'string' || queueName === '') {
      problems.push(badProcessorQueue(at, queueName));
      return;
    }
    let draft = drafts.get(queueName);
    if (!draft) {
      const queue = this.context.getQueue(queueName);
      if (!queue) {
        // (Its token provided by something not a queue: a test's overrideProvider(getQueueToken(…)).)
        const overridden = this.discovery
          .getProviders()
          .some((w) => w.token === getQueueToken(queueName) && !(w.instance instanceof WorkQueue));
        problems.push((overridden ? queueOverridden : queueNotRegistered)(at, queueName));
      }
      draft = {
        queueName,
        queue,
        classNames: [],
        classes: [],
        instances: [],
        options: {},
        optionOwner: {},
        named: new Map(),
        catchAll: undefined,
        listenersOnly: [],
      };
      drafts.set(queueName, draft);
    }
    const cls: unknown = instance.constructor;
    if (draft.classes.includes(cls)) {
      problems.push(processorFoundTwice(at, className));
      return;
    }
    draft.classes.push(cls);
    draft.classNames.push(className);
    draft.instances.push(instance);

    const optionProblems = processorOptionProblems(options, at);
    const beats =
      (options as ProcessorOptions | null)?.heartbeatIntervalMs ??
      this.context.workerDefaults.heartbeatIntervalMs;
    const timeout = draft.queue?.options.heartbeatTimeoutMs;
    const beat = timeout && heartbeatIntervalProblem(beats, timeout, at);
    if (beat) optionProblems.push(beat);
    problems.push(...optionProblems);
    if (optionProblems.length === 0) {
      for (const [key, value] of Object.entries(options)) {
        if (value === undefined) continue;
        const owner = draft.optionOwner[key];
        if (owner !== undefined && draft.options[key] !== value) {
          problems.push(conflictingOption(at, key, value, owner, draft.options[key]));
          continue;
        }
        draft.options[key] = value;
        draft.optionOwner[key] = className;
      }
    }

    const prototype = Object.getPrototypeOf(instance) as Record<string, unknown> | null;
    let methods = 0;
    let listeners = 0;
    for (const methodName of this.scanner.getAllMethodNames(prototype)) {
      const method = prototype?.[methodName];
      if (this.accessor.getWorkerEvents(method).length > 0) listeners++;
      const process = this.accessor.getProcessMetadata(method);
      if (!process || typeof method !== 'function') continue;
      methods++;
      const handler: ProcessHandler = {
        className,
        methodName,
        invoke: (job) => (method as (job: Job) => unknown).call(instance, job),
      };
      const name = process.name;
      if (name === undefined) {
        if (draft.catchAll) {
          problems.push(
            twoCatchAlls(at, queueName, handlerName(draft.catchAll), handlerName(handler)),
          );
        } else draft.catchAll = handler;
        continue;
      }
      if (typeof name !== 'string' || name.length === 0 || name.length > 200) {
        problems.push(badJobName(at, name, methodName));
        continue;
      }
      const other = draft.named.get(name);
      if (other) {
        problems.push(
          twoNamedHandlers(at, name, queueName, handlerName(other), handlerName(handler)),
        );
      } else draft.named.set(name, handler);
    }
    // Listeners only: their queue's other classes must process its jobs (checked at the end).
    // (Not one of the worker's processor classes: its name, the sandbox check.)
    if (methods === 0 && listeners > 0) {
      draft.listenersOnly.push(className);
      draft.classNames.splice(draft.classNames.indexOf(className), 1);
    } else if (methods === 0) problems.push(noProcessMethod(at));
  }
}
