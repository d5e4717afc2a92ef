/**
 * A handler's DelayedError or RateLimitError is a step, not a failure (no attempt counted): the
 * duration histogram labels its run `delayed` or `rate_limited`, not `error`, and its `process`
 * span keeps an unset status with `work_queue.outcome` saying which step it was.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { Registry } from 'prom-client';
import { DelayedError, RateLimitError } from '../../../lib/index.js';
import { registerQueueMetrics } from '../../../src/metrics/index.js';
import { instrumentWorker } from '../../../src/otel/index.js';
import { parseMetrics } from '../../support/prometheus.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
const worker = workersClosedAfterEach();
const exporter = new InMemorySpanExporter();

afterAll(async () => {
  trace.disable();
  context.disable();
  await fx.cleanup();
});

describe('steps in metrics and traces', () => {
  it('a delayed and a rate-limited run are steps; a thrown error is an error', async () => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    const q = fx.queue({ maxAttempts: 2, backoff: { type: 'fixed', delayMs: 1 } });
    const registry = new Registry();
    let runs = 0;
    const w = worker(q, (job) => {
      runs++;
      // 1: delayed, 2: rate limited, 3: fails, 4: completes.
      if (runs === 1) throw new DelayedError(1);
      if (runs === 2) throw new RateLimitError(1);
      if (runs === 3) throw new Error('a real failure');
      return job.data;
    });
    const metrics = registerQueueMetrics(registry, { workers: [w] });
    instrumentWorker(w);
    let completed = 0;
    w.on('completed', () => completed++);
    await q.add('x', { id: 'step-1' });
    await waitFor(() => completed === 1, { what: 'the job completed', timeoutMs: 10_000 });
    try {
      const outcomes = parseMetrics(await registry.metrics())
        .filter((s) => s.name === 'work_queue_job_duration_seconds_count')
        .map((s) => [s.labels.outcome, s.value])
        .sort();
      expect(outcomes).toEqual([
        ['delayed', 1],
        ['error', 1],
        ['rate_limited', 1],
        ['success', 1],
      ]);
      await waitFor(() => exporter.getFinishedSpans().length === 4, { what: '4 process spans' });
      const spans = exporter.getFinishedSpans().map((s) => ({
        outcome: s.attributes['work_queue.outcome'],
        status: s.status.code,
        exceptions: s.events.filter((e) => e.name === 'exception').length,
      }));
      expect(spans).toEqual([
        { outcome: 'delayed', status: SpanStatusCode.UNSET, exceptions: 0 },
        { outcome: 'rate_limited', status: SpanStatusCode.UNSET, exceptions: 0 },
        { outcome: undefined, status: SpanStatusCode.ERROR, exceptions: 1 },
        { outcome: undefined, status: SpanStatusCode.UNSET, exceptions: 0 },
      ]);
    } finally {
      metrics.close();
    }
  });
});
