// nestjs-work-queue/otel with the SDK's in-memory exporter: no provider, nothing travels; with
// one, parent span → add → handler span share one trace and the handler span is the child.
import { afterAll, describe, expect, it } from '@jest/globals';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Job } from '../../../lib/index.js';
import { instrumentQueue, instrumentWorker } from '../../../src/otel/index.js';
import { QueueFixture } from '../../support/queue.js';
import { deferred, workersClosedAfterEach } from '../../support/worker.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
const worker = workersClosedAfterEach();
const exporter = new InMemorySpanExporter();
const contextManager = new AsyncLocalStorageContextManager();

afterAll(async () => {
  trace.disable();
  context.disable();
  propagation.disable();
  await fx.cleanup();
});

describe('nestjs-work-queue/otel', () => {
  it('without a tracer provider, adds and runs pass through: no trace context is stored', async () => {
    const q = fx.queue<string>();
    instrumentQueue(q);
    const { id } = await q.add('plain');
    const seen = deferred<Job<string>>();
    instrumentWorker(worker(q, (job) => seen.resolve(job)));
    const job = await seen.promise;
    expect(job.id).toBe(id);
    expect(job.traceContext).toBeUndefined();
  });

  it('carries the add-time context: publish span under the parent, process span under publish', async () => {
    context.setGlobalContextManager(contextManager.enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(
      new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
    );
    const q = fx.queue<string>({ maxAttempts: 2, backoff: { type: 'fixed', delayMs: 1 } });
    instrumentQueue(q);
    const tracer = trace.getTracer('test');
    const { id, traceId } = await tracer.startActiveSpan('request', async (parent) => {
      const added = await q.add('traced', { id: 'traced-1' });
      parent.end();
      return { id: added.id, traceId: parent.spanContext().traceId };
    });
    const stored = await fx.client().hget(q.keys.key('meta'), '1');
    const jobs: Array<Job<string>> = [];
    const w = worker(q, (job) => {
      jobs.push(job);
      // A span the handler starts is a child of the process span.
      tracer.startSpan('inside').end();
      if (job.attempt === 1) throw new Error('first attempt fails');
    });
    instrumentWorker(w);
    await waitFor(
      () => exporter.getFinishedSpans().filter((s) => s.name === 'inside').length === 2,
    );
    const spans = exporter.getFinishedSpans();
    const byName = (name: string) => spans.filter((s) => s.name === name);
    const [request] = byName('request');
    const [publish] = byName(`publish ${q.name}`);
    const processes = byName(`process ${q.name}`);
    expect(jobs.map((j) => j.traceContext)).toEqual([
      expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/),
      jobs[0]!.traceContext,
    ]);
    expect(stored ?? '').toContain(jobs[0]!.traceContext!);
    expect(publish).toMatchObject({
      kind: SpanKind.PRODUCER,
      parentSpanContext: { spanId: request!.spanContext().spanId },
      attributes: {
        'messaging.system': 'nestjs-work-queue',
        'messaging.destination.name': q.name,
        'messaging.operation': 'publish',
        'messaging.message.id': id,
      },
    });
    expect(processes).toHaveLength(2);
    for (const span of [publish!, ...processes, ...byName('inside')])
      expect(span.spanContext().traceId).toBe(traceId);
    for (const [i, span] of processes.entries()) {
      expect(span).toMatchObject({
        kind: SpanKind.CONSUMER,
        parentSpanContext: { spanId: publish!.spanContext().spanId },
        attributes: {
          'messaging.destination.name': q.name,
          'messaging.operation': 'process',
          'messaging.message.id': 'traced-1',
        },
        status: { code: i === 0 ? SpanStatusCode.ERROR : SpanStatusCode.UNSET },
      });
      expect(byName('inside')[i]!.parentSpanContext?.spanId).toBe(span.spanContext().spanId);
    }
  });

  // (With the provider the test above set.)
  it('a run aborted (jobTimeoutMs) ends its span with the reason, though its handler never settles', async () => {
    const q = fx.queue<string>({ maxAttempts: 1 });
    const w = worker(q, () => new Promise<never>(() => undefined), { jobTimeoutMs: 200 });
    instrumentWorker(w);
    const { id } = await q.add('hangs');
    await waitFor(async () => (await q.getJob(id))?.state === 'dead');
    await waitFor(() =>
      exporter.getFinishedSpans().some((s) => s.attributes['messaging.message.id'] === id),
    );
    const span = exporter
      .getFinishedSpans()
      .find((s) => s.attributes['messaging.message.id'] === id && s.name === `process ${q.name}`);
    expect(span).toMatchObject({
      status: { code: SpanStatusCode.ERROR, message: expect.stringMatching(/200 ms/) },
      attributes: { 'work_queue.outcome': 'aborted' },
    });
  });
});
