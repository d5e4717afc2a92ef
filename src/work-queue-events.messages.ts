// The messages of the event hooks (@OnWorkerEvent, @QueueEventsListener/@OnQueueEvent).
import { quote } from './work-queue.messages.js';

export const CANNOT_START_EVENT_LISTENERS = 'WorkQueueModule cannot start its event listeners';
/** `Class.method()`: how a listener method is named in messages. */
export const methodName = (className: string, method: string) => `${className}.${method}()`;
export const workerEventNotOnProcessor = (className: string, method: string) =>
  `@OnWorkerEvent() on ${methodName(className, method)}: ${className} is not a @Processor() class; worker events are heard by the processor of the queue`;
export const badWorkerEvent = (className: string, method: string, event: string, known: string) =>
  `@OnWorkerEvent(${quote(event)}) on ${methodName(className, method)}: not a worker event; known: ${known}`;
export const queueEventNotOnListener = (className: string, method: string) =>
  `@OnQueueEvent() on ${methodName(className, method)}: ${className} is not a @QueueEventsListener() class`;
export const badQueueEvent = (className: string, method: string, kind: string, known: string) =>
  `@OnQueueEvent(${quote(kind)}) on ${methodName(className, method)}: not an event kind; known: ${known}`;
/** Prefix of every problem of one `@QueueEventsListener()` class. */
export const listenerAt = (queueName: string, className: string) =>
  `@QueueEventsListener(${quote(queueName)}) on ${className}: `;
export const listenerNotSingleton = (at: string) =>
  `${at}is request-scoped or transient (or depends on a request-scoped provider); a listener must be a singleton (default scope), since it hears events for the whole application`;
export const listenerQueueNotRegistered = (at: string, queueName: string) =>
  `${at}queue ${JSON.stringify(queueName)} is not registered; add WorkQueueModule.registerQueue({ name: ${quote(queueName)} }) to the imports of a module`;
export const listenerWithoutEvents = (at: string, queueName: string) =>
  `${at}queue ${JSON.stringify(queueName)} keeps no event log (events: false), so there is nothing to hear`;
export const noOnQueueEventMethod = (at: string) =>
  `${at}no @OnQueueEvent() method; add @OnQueueEvent('completed') (or another kind) to a method`;
export const workerEventListenerFailed = (
  queue: string,
  method: string,
  event: string,
  error: string,
) => `queue "${queue}": @OnWorkerEvent(${quote(event)}) ${method} failed: ${error}`;
export const queueEventListenerFailed = (
  queue: string,
  method: string,
  kind: string,
  error: string,
) => `queue "${queue}": @OnQueueEvent(${quote(kind)}) ${method} failed: ${error}`;
export const queueEventsReadFailed = (queue: string, error: string) =>
  `queue "${queue}": reading its event log failed, retrying: ${error}`;
export const queueEventsStarted = (queue: string, classNames: readonly string[]) =>
  `events of queue "${queue}" heard by ${classNames.join(', ')}`;
export const queueEventsStartTimeout = (queue: string, ms: number, lastError: string | undefined) =>
  `queue "${queue}": its event log could not be read within ${ms} ms, Redis did not answer${lastError ? `: ${lastError}` : ''}`;
