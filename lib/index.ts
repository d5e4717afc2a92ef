export {
  WorkQueue,
  type CompleteItem,
  type LeaseBatch,
  type WorkerCallOptions,
} from './queue/index.js';
export {
  WorkQueueError,
  JobOutcomeError,
  NonRetryableError,
  RateLimitError,
  DelayedError,
  errorMessage,
  type WorkQueueErrorCode,
} from './errors.js';
export {
  QUEUE_DEFAULTS,
  defaultCleanInterval,
  queueOptionProblems,
  type ResolvedQueueOptions,
} from './options.js';
export { queueKeys, type QueueKeys } from './redis/queue-keys.js';
export { RECONNECT_OPTIONS, SENTINEL_CLIENT_OPTIONS } from './redis/connection.js';
export { FlowProducer } from './queue/flows/producer.js';
export type * from './types/index.js';
export {
  Worker,
  workerOptionProblems,
  type BackoffStrategy,
  type Job,
  type Handler,
  type WorkerOptions,
  type WorkerEvents,
} from './worker/worker.js';
export type { AddHook, RunHook } from './types/hooks.js';
// ---------------------------------------------------------------- events
export { QueueEvents } from './events/queue-events.js';
export type { WaitForResultOptions } from './queue/results.js';
export type {
  EventTimes,
  QueueEvent,
  QueueEventKind,
  QueueEventOf,
  QueueEventsEvents,
  QueueEventsOptions,
} from './events/types.js';
