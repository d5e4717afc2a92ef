// The 'nestjs-work-queue/otel' entry (peer @opentelemetry/api): trace context carried with jobs,
// publish and process spans; instrumentQueue/instrumentWorker or the Nest module.
export {
  TRACER_NAME,
  decodeTraceContext,
  encodeTraceContext,
  instrumentQueue,
  instrumentWorker,
  tracingAddHook,
  tracingRunHook,
  type TracedQueue,
  type TracedWorker,
} from './tracing.js';
export { WorkQueueTracing, WorkQueueTracingModule } from './work-queue-tracing.module.js';
