// OpenTelemetry tracing of queues and workers (nestjs-work-queue/otel, peer @opentelemetry/api):
// a publish span around each add, whose context travels with the jobs; a process span per run.
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
} from '@opentelemetry/api';
import { stepOf, type AddHook, type RunHook } from '../../lib/internal.js';

/** Tracer name, and the `messaging.system` of the spans. */
export const TRACER_NAME = 'nestjs-work-queue';

/** A queue as `instrumentQueue` needs it. */
export interface TracedQueue {
  readonly name: string;
  useAddHook(hook: AddHook): () => void;
}

/** A worker as `instrumentWorker` needs it. */
export interface TracedWorker {
  readonly queue: { readonly name: string };
  useRunHook(hook: RunHook): () => void;
}

/**
 * Whether a tracer provider is registered: until one is (the API's proxy has no delegate),
 * adds and runs pass straight through (no span, no inject, nothing stored with the job).
 */
function tracing(): boolean {
  const provider = trace.getTracerProvider() as { getDelegateTracer?: (name: string) => unknown };
  return (
    typeof provider.getDelegateTracer !== 'function' ||
    provider.getDelegateTracer(TRACER_NAME) !== undefined
  );
}

/**
 * The job's trace context from the propagator's carrier, kept small: the W3C `traceparent`
 * (55 characters), then a space and the `tracestate` when there is one. Other fields (baggage,
 * other propagators' headers) do not travel.
 */
export function encodeTraceContext(carrier: Record<string, string>): string | undefined {
  const parent = carrier.traceparent;
  if (!parent) return undefined;
  return carrier.tracestate ? `${parent} ${carrier.tracestate}` : parent;
}

export function decodeTraceContext(value: string): Record<string, string> {
  const space = value.indexOf(' ');
  if (space < 0) return { traceparent: value };
  return { traceparent: value.slice(0, space), tracestate: value.slice(space + 1) };
}

function attributes(queue: string, operation: 'publish' | 'process'): Attributes {
  return {
    'messaging.system': TRACER_NAME,
    'messaging.destination.name': queue,
    'messaging.operation': operation,
  };
}

async function inSpan<X>(span: Span, work: () => Promise<X>): Promise<X> {
  try {
    return await work();
  } catch (e) {
    // (Ended already: the run was aborted, see tracingRunHook.)
    if (!span.isRecording()) throw e;
    // A handler's DelayedError or RateLimitError is a step, not an error: noted, status unset.
    const step = stepOf(e);
    if (step) {
      span.setAttribute('work_queue.outcome', step);
      throw e;
    }
    span.recordException(e instanceof Error ? e : String(e));
    span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : '' });
    throw e;
  } finally {
    if (span.isRecording()) span.end();
  }
}

/** The add hook: a producer span `publish <queue>` whose context each job carries. */
export const tracingAddHook: AddHook = {
  aroundAdd(queueName, jobs, send) {
    if (!tracing()) return send(undefined);
    const attrs = attributes(queueName, 'publish');
    if (jobs !== 1) attrs['messaging.batch.message_count'] = jobs;
    const tracer = trace.getTracer(TRACER_NAME);
    return tracer.startActiveSpan(
      `publish ${queueName}`,
      { kind: SpanKind.PRODUCER, attributes: attrs },
      (span) =>
        inSpan(span, async () => {
          const carrier: Record<string, string> = {};
          propagation.inject(context.active(), carrier);
          const results = await send(encodeTraceContext(carrier));
          if (results.length === 1) span.setAttribute('messaging.message.id', results[0]!.id);
          return results;
        }),
    );
  },
};

/** The run hook: a consumer span `process <queue>`, a child of the add's span when it had one. */
export const tracingRunHook: RunHook = {
  aroundRun(job, run) {
    if (!tracing()) return run();
    const parent = job.traceContext
      ? propagation.extract(ROOT_CONTEXT, decodeTraceContext(job.traceContext))
      : ROOT_CONTEXT;
    const attrs = attributes(job.queueName, 'process');
    attrs['messaging.message.id'] = job.id;
    if (job.attempt > 1) attrs['messaging.message.delivery_attempt'] = job.attempt;
    const tracer = trace.getTracer(TRACER_NAME);
    return tracer.startActiveSpan(
      `process ${job.queueName}`,
      { kind: SpanKind.CONSUMER, attributes: attrs },
      parent,
      (span) => {
        // A run aborted (its jobTimeoutMs, a cancel, its lease lost, a close) ends its span with
        // the reason, whether or not its handler ever settles (one in-process cannot be stopped).
        const aborted = () => {
          if (!span.isRecording()) return;
          const reason: unknown = job.signal.reason;
          span.setStatus({ code: SpanStatusCode.ERROR, message: errorText(reason) });
          span.setAttribute('work_queue.outcome', 'aborted');
          span.end();
        };
        if (job.signal.aborted) aborted();
        else job.signal.addEventListener('abort', aborted, { once: true });
        return inSpan(span, run).finally(() => job.signal.removeEventListener('abort', aborted));
      },
    );
  },
};

const errorText = (e: unknown): string => (e instanceof Error ? e.message : String(e));

const queues = new WeakMap<TracedQueue, () => void>();
const workers = new WeakMap<TracedWorker, () => void>();

/** Trace this queue object's adds (idempotent). Returns the undo. */
export function instrumentQueue(queue: TracedQueue): () => void {
  let undo = queues.get(queue);
  if (!undo) {
    const remove = queue.useAddHook(tracingAddHook);
    undo = () => (queues.delete(queue), remove());
    queues.set(queue, undo);
  }
  return undo;
}

/** Trace this worker's handler runs (idempotent). Returns the undo. */
export function instrumentWorker(worker: TracedWorker): () => void {
  let undo = workers.get(worker);
  if (!undo) {
    const remove = worker.useRunHook(tracingRunHook);
    undo = () => (workers.delete(worker), remove());
    workers.set(worker, undo);
  }
  return undo;
}
