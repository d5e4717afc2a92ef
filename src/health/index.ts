// The 'nestjs-work-queue/health' entry: the Terminus health indicator and its module.
export {
  WorkQueueHealthIndicator,
  WorkQueueHealthModule,
  type WorkQueueHealthCounts,
  type WorkQueueHealthDetails,
  type WorkQueueHealthOptions,
} from './work-queue.health.js';
export {
  type WorkQueueLivenessDetails,
  type WorkQueueLivenessOptions,
  type WorkQueueWorkerLiveness,
} from './liveness-check.js';
