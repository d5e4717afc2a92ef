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
export {
  queueKeys,
  type KeyOwner,
  type ParentKeyKind,
  type QueueKeys,
} from './redis/queue-keys.js';
// (Types public signatures name: redisInfo(), completeAndLease(), CompleteItem, QueueKeys.)
export type { KeyName } from './keys.js';
export type { RedisInfo } from './redis/info.js';
export type { CompleteReply } from './queue/lease-types.js';
export type { LogBatch } from './job/logs.js';
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
  EventBase,
  EventTimes,
  QueueEvent,
  QueueEventKind,
  QueueEventOf,
  QueueEventsEvents,
  QueueEventsOptions,
} from './events/types.js';
