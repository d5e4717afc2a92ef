// The Nest side of nestjs-work-queue/metrics: WorkQueueMetricsModule.forRoot() registers the
// metrics of the app's queues and the workers of its processors (from WorkQueueContext).
import {
  Inject,
  Injectable,
  Module,
  Optional,
  type DynamicModule,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { Registry } from 'prom-client';
import { WorkQueueContext } from '../work-queue.context.js';
import { invalidOptions } from '../../lib/internal.js';
import { checkMetricsOptions } from './metrics-options.js';
import { registerQueueMetrics, type QueueMetrics } from './queue-metrics.js';

export interface WorkQueueMetricsModuleOptions {
  /**
   * Registry the metrics go to. Default: a registry of this module's own (pass prom-client's
   * global `register` to serve them with your other metrics).
   */
  registry?: Registry;
  /** Metric name prefix. Default `work_queue_`. */
  prefix?: string;
  /** Buckets (seconds) of the handler duration histogram. */
  durationBuckets?: number[];
  /** Buckets (seconds) of the wait time histogram (added → first start). */
  waitBuckets?: number[];
  /** Queues to report (default: every registered queue). */
  queues?: string[];
  /** Label the per-process counters and the histogram by job group (see `registerQueueMetrics`). */
  groupLabel?: boolean;
}

export const WORK_QUEUE_METRICS_OPTIONS = Symbol('WORK_QUEUE_METRICS_OPTIONS');

/**
 * The queues' metrics (see `registerQueueMetrics`) in `registry`. Serve them from a controller:
 *
 * ```ts
 * @Get('metrics') @Header('Content-Type', Registry.PROMETHEUS_CONTENT_TYPE)
 * metrics() { return this.queueMetrics.registry.metrics(); }
 * ```
 */
@Injectable()
export class WorkQueueMetrics implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly registry: Registry;
  private readonly handle: QueueMetrics;
  private readonly names: readonly string[] | undefined;
  private readonly context: WorkQueueContext;

  constructor(
    context: WorkQueueContext,
    @Optional()
    @Inject(WORK_QUEUE_METRICS_OPTIONS)
    options: WorkQueueMetricsModuleOptions | undefined,
  ) {
    checkMetricsOptions(options, 'module');
    this.names = options?.queues;
    this.context = context;
    const {
      registry = new Registry(),
      prefix,
      durationBuckets,
      waitBuckets,
      queues: names,
      groupLabel,
    } = options ?? {};
    this.registry = registry;
    const queues = names
      ? () => context.queues.filter((q) => names.includes(q.name))
      : () => context.queues;
    const workers = names
      ? () => context.workers.filter((w) => names.includes(w.queue.name))
      : () => context.workers;
    this.handle = registerQueueMetrics(registry, {
      queues,
      workers,
      prefix,
      durationBuckets,
      groupLabel,
      waitBuckets,
    });
  }

  /** Picks up the processors' workers (also done at each scrape); a queue named but not registered fails the bootstrap. */
  onApplicationBootstrap(): void {
    const registered = this.context.queues.map((q) => q.name);
    const missing = (this.names ?? []).filter((n) => !registered.includes(n));
    if (missing.length > 0)
      throw invalidOptions(
        'invalid WorkQueueMetricsModule options',
        missing.map(
          (n) =>
            `queues: queue ${JSON.stringify(n)} is not registered (registered: ${registered.map((r) => JSON.stringify(r)).join(', ') || 'none'})`,
        ),
      );
    this.handle.refresh();
  }

  /** Stops counting and removes the metrics from the registry. */
  onApplicationShutdown(): void {
    this.handle.close();
  }
}

/**
 * `imports: [WorkQueueMetricsModule.forRoot()]` provides `WorkQueueMetrics` (with
 * `WorkQueueModule.forRoot()` imported too).
 */
@Module({})
export class WorkQueueMetricsModule {
  static forRoot(options: WorkQueueMetricsModuleOptions = {}): DynamicModule {
    return {
      module: WorkQueueMetricsModule,
      providers: [{ provide: WORK_QUEUE_METRICS_OPTIONS, useValue: options }, WorkQueueMetrics],
      exports: [WorkQueueMetrics],
    };
  }
}
