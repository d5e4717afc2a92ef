export {
  WorkQueueHealthIndicator,
  WorkQueueHealthModule,
  type WorkQueueHealthCounts,
  type WorkQueueHealthDetails,
  type WorkQueueHealthOptions,
} from './work-queue.health.js';
