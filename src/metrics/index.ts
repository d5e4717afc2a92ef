// The 'nestjs-work-queue/metrics' entry (peer prom-client): Prometheus metrics of queues and
// workers, framework-agnostic (registerQueueMetrics) and as a Nest module.
export {
  registerQueueMetrics,
  type QueueMetrics,
  type QueueMetricsOptions,
} from './queue-metrics.js';
export {
  WorkQueueMetrics,
  WorkQueueMetricsModule,
  WORK_QUEUE_METRICS_OPTIONS,
  type WorkQueueMetricsModuleOptions,
} from './work-queue-metrics.module.js';
