// GET /metrics: the queues' Prometheus metrics (nestjs-work-queue/metrics).
import { Controller, Get, Header } from '@nestjs/common';
import { Registry } from 'prom-client';
import { WorkQueueMetrics } from '../src/metrics/index.js';

@Controller('metrics')
export class MetricsController {
  constructor(private readonly queueMetrics: WorkQueueMetrics) {}

  /** Gauges read from Redis at scrape time; this instance's job counters and durations. */
  @Get()
  @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
  metrics(): Promise<string> {
    return this.queueMetrics.registry.metrics();
  }
}
