// The 'nestjs-work-queue/health' entry: the Terminus health indicator and its module.
export {
  WorkQueueHealthIndicator,
  WorkQueueHealthModule,
  type WorkQueueHealthCounts,
  type WorkQueueHealthDetails,
  type WorkQueueHealthOptions,
} from './work-queue.health.js';
