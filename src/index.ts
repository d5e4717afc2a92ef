// The framework-agnostic core (queues, workers, errors, types), so that everything can be
// imported from 'nestjs-work-queue'. The core alone is 'nestjs-work-queue/core'.
export * from '../lib/index.js';

export * from './decorators/index.js';
export * from './interfaces/index.js';
export { getQueueToken } from './utils/get-queue-token.util.js';
export { getFlowProducerToken } from './utils/get-flow-producer-token.util.js';
export { WorkQueueModule } from './work-queue.module.js';
export { WORK_QUEUE_MODULE_OPTIONS } from './work-queue.module-definition.js';
export { WorkQueueContext } from './work-queue.context.js';
export { WorkQueueCleaner, type CleanerRun } from './work-queue.cleaner.js';
