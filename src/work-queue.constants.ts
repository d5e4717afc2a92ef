// Metadata keys, token prefixes and defaults of the Nest module (the key prefix's default is
// the core's QUEUE_DEFAULTS.prefix).
/** Metadata key set by `@Processor()` on a class. */
export const WORK_QUEUE_PROCESSOR_METADATA = 'work-queue:processor';

/** Metadata key set by `@Process()` on a method. */
export const WORK_QUEUE_PROCESS_METADATA = 'work-queue:process';

/** Prefix of the injection tokens of queues: `WorkQueue:<name>` (see `getQueueToken`). */
export const WORK_QUEUE_TOKEN_PREFIX = 'WorkQueue:';

/** Prefix of the injection tokens of flow producers: `FlowProducer:<name>`. */
export const WORK_QUEUE_FLOW_PRODUCER_TOKEN_PREFIX = 'FlowProducer:';

/** Logger context of the module's default logger. */
export const WORK_QUEUE_LOGGER_CONTEXT = 'WorkQueue';

/** Defaults of the module options. */
export const WORK_QUEUE_MODULE_DEFAULTS = {
  shutdownTimeoutMs: 10_000,
  /**
   * How long the bootstrap waits for a worker to start (Redis version check, registration).
   * With Redis unreachable, ioredis would retry each command about 75 s (20 times, backing off
   * to 5 s) before failing it.
   */
  startTimeoutMs: 10_000,
  /** The cleaner's interval when it has no queue to derive it from (see defaultCleanInterval). */
  cleanerMaxIntervalMs: 5_000,
} as const;

/** Metadata key set by `@OnWorkerEvent()` on a method (an array of event names). */
export const WORK_QUEUE_WORKER_EVENT_METADATA = 'work-queue:on-worker-event';

/** Metadata key set by `@QueueEventsListener()` on a class. */
export const WORK_QUEUE_EVENTS_LISTENER_METADATA = 'work-queue:queue-events-listener';

/** Metadata key set by `@OnQueueEvent()` on a method (an array of event kinds). */
export const WORK_QUEUE_QUEUE_EVENT_METADATA = 'work-queue:on-queue-event';
