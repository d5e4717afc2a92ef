// Finds the event hooks at bootstrap: @OnWorkerEvent() methods of @Processor() classes, and
// @QueueEventsListener() classes with their @OnQueueEvent() methods. Internal.
import { Injectable } from '@nestjs/common';
import { DiscoveryService, MetadataScanner } from '@nestjs/core';
import type { WorkQueue } from '../lib/internal.js';
import { invalidOptions } from '../lib/internal.js';
import { QUEUE_EVENT_KINDS } from './decorators/on-queue-event.decorator.js';
import {
  WORKER_EVENT_NAMES,
  type WorkerEventName,
} from './decorators/on-worker-event.decorator.js';
import type { ListenerMethod } from './utils/listener-method.util.js';
import { WorkQueueMetadataAccessor } from './work-queue-metadata.accessor.js';
import { WorkQueueContext } from './work-queue.context.js';
import {
  badQueueEvent,
  badWorkerEvent,
  CANNOT_START_EVENT_LISTENERS,
  listenerAt,
  listenerNotSingleton,
  listenerQueueNotRegistered,
  listenerWithoutEvents,
  noOnQueueEventMethod,
  queueEventNotOnListener,
  workerEventNotOnProcessor,
} from './work-queue-events.messages.js';

/** The `@OnWorkerEvent()` methods of one queue's processors, by event. */
export type WorkerEventMethods = Map<WorkerEventName, ListenerMethod[]>;

/** The `@QueueEventsListener()` classes of one queue. */
export interface QueueListeners {
  readonly queue: WorkQueue;
  readonly classNames: string[];
  /** `@OnQueueEvent()` methods by event kind. */
  readonly methods: Map<string, ListenerMethod[]>;
}

export interface ExploreResult {
  /** `@OnWorkerEvent()` methods by queue name. */
  workerEvents: Map<string, WorkerEventMethods>;
  queueEvents: QueueListeners[];
}

interface Found {
  className: string;
  target: { prototype: unknown };
  /** The singleton instance; undefined for request-scoped and transient providers. */
  instance: object | undefined;
}

type Wrapper = ReturnType<DiscoveryService['getProviders']>[number];

/**
 * Reads every provider's methods once (like @nestjs/schedule does for `@Cron`), so that a
 * decorator on the wrong class fails the bootstrap instead of never firing. Every problem is
 * listed in one `INVALID_OPTIONS` error. Request-scoped and transient processors are reported by
 * the processors' explorer; such listeners here.
 */
@Injectable()
export class WorkQueueEventsExplorer {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly accessor: WorkQueueMetadataAccessor,
    private readonly context: WorkQueueContext,
  ) {}

  private found: ExploreResult | undefined;

  /** What the providers declare (read once per application; both users share it). */
  explore(): ExploreResult {
    this.found ??= this.scan();
    return this.found;
  }

  private scan(): ExploreResult {
    const problems: string[] = [];
    const workerEvents = new Map<string, WorkerEventMethods>();
    const queueEvents = new Map<string, QueueListeners>();
    for (const found of this.providers()) {
      this.exploreWorkerEvents(found, workerEvents, problems);
      this.exploreQueueEvents(found, queueEvents, problems);
    }
    if (problems.length > 0) throw invalidOptions(CANNOT_START_EVENT_LISTENERS, problems);
    return { workerEvents, queueEvents: [...queueEvents.values()] };
  }

  private exploreWorkerEvents(
    { className, target, instance }: Found,
    byQueue: Map<string, WorkerEventMethods>,
    problems: string[],
  ): void {
    const processor = this.accessor.getProcessorMetadata(target);
    for (const [name, method, events] of this.decorated(target, (m) =>
      this.accessor.getWorkerEvents(m),
    )) {
      if (!processor) {
        problems.push(workerEventNotOnProcessor(className, name));
        continue;
      }
      for (const event of events) {
        if (!(WORKER_EVENT_NAMES as readonly string[]).includes(event)) {
          problems.push(badWorkerEvent(className, name, event, WORKER_EVENT_NAMES.join(', ')));
          continue;
        }
        if (!instance) continue; // a non-singleton processor: the processors' explorer says so
        let methods = byQueue.get(processor.queueName);
        if (!methods) byQueue.set(processor.queueName, (methods = new Map()));
        const list = methods.get(event as WorkerEventName) ?? [];
        list.push(bind(className, name, method, instance));
        methods.set(event as WorkerEventName, list);
      }
    }
  }

  private exploreQueueEvents(
    { className, target, instance }: Found,
    byQueue: Map<string, QueueListeners>,
    problems: string[],
  ): void {
    const meta = this.accessor.getQueueEventsListenerMetadata(target);
    const decorated = this.decorated(target, (m) => this.accessor.getQueueEvents(m));
    if (!meta) {
      for (const [name] of decorated) problems.push(queueEventNotOnListener(className, name));
      return;
    }
    const at = listenerAt(meta.queueName, className);
    const before = problems.length;
    if (!instance) problems.push(listenerNotSingleton(at));
    const queue = this.context.getQueue(meta.queueName);
    if (!queue) problems.push(listenerQueueNotRegistered(at, meta.queueName));
    else if (queue.options.eventMaxLen === 0) {
      problems.push(listenerWithoutEvents(at, meta.queueName));
    }
    if (decorated.length === 0) problems.push(noOnQueueEventMethod(at));
    const known = QUEUE_EVENT_KINDS as readonly string[];
    for (const [name, , kinds] of decorated) {
      for (const kind of kinds) {
        if (!known.includes(kind))
          problems.push(badQueueEvent(className, name, kind, known.join(', ')));
      }
    }
    if (problems.length > before || !queue || !instance) return;
    let listeners = byQueue.get(queue.name);
    if (!listeners) {
      listeners = { queue, classNames: [], methods: new Map() };
      byQueue.set(queue.name, listeners);
    }
    listeners.classNames.push(className);
    for (const [name, method, kinds] of decorated) {
      for (const kind of kinds) {
        const list = listeners.methods.get(kind) ?? [];
        list.push(bind(className, name, method, instance));
        listeners.methods.set(kind, list);
      }
    }
  }

  /** The methods of a class carrying some metadata: [name, method, the metadata's values]. */
  private decorated(
    target: { prototype: unknown },
    read: (method: unknown) => readonly string[],
  ): [string, (...args: unknown[]) => unknown, readonly string[]][] {
    const prototype = target.prototype as Record<string, unknown> | null;
    if (typeof prototype !== 'object' || prototype === null) return [];
    const out: [string, (...args: unknown[]) => unknown, readonly string[]][] = [];
    for (const name of this.scanner.getAllMethodNames(prototype)) {
      const method = prototype[name];
      if (typeof method !== 'function') continue;
      const values = read(method);
      if (values.length > 0) out.push([name, method as (...args: unknown[]) => unknown, values]);
    }
    return out;
  }

  /** Each provider class once (aliases skipped), with its singleton instance if it has one. */
  private providers(): Found[] {
    const out: Found[] = [];
    const seen = new Set<unknown>();
    for (const wrapper of this.discovery.getProviders()) {
      if (wrapper.isAlias) continue;
      const target = targetOf(wrapper);
      if (typeof target !== 'function') continue;
      const singleton = !wrapper.isTransient && wrapper.isDependencyTreeStatic();
      const instance: unknown = singleton ? wrapper.instance : undefined;
      const key = typeof instance === 'object' && instance !== null ? instance : wrapper;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({
        className: target.name || '(anonymous class)',
        target: target as { prototype: unknown },
        instance: typeof instance === 'object' && instance !== null ? instance : undefined,
      });
    }
    return out;
  }
}

/** The class whose metadata describes this provider (as the processors' explorer reads it). */
function targetOf(wrapper: Wrapper): unknown {
  if (!wrapper.isNotMetatype) return wrapper.metatype;
  const instance: unknown = wrapper.instance;
  return typeof instance === 'object' && instance !== null ? instance.constructor : undefined;
}

function bind(
  className: string,
  methodName: string,
  method: (...args: unknown[]) => unknown,
  instance: object,
): ListenerMethod {
  return { className, methodName, call: (...args) => method.apply(instance, args) };
}
