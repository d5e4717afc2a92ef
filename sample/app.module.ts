import { Module, type DynamicModule } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WorkQueueModule } from '../src/index.js';
import { WorkQueueHealthIndicator } from '../src/health/index.js';
import { WorkQueueMetricsModule } from '../src/metrics/index.js';
import { EmailEventsListener } from './email-events.listener.js';
import { EmailProcessor } from './email.processor.js';
import { EMAILS } from './emails.js';
import { HealthController } from './health.controller.js';
import { JobsController } from './jobs.controller.js';
import { MetricsController } from './metrics.controller.js';
import { OrderProcessor, PaymentProcessor, StockProcessor } from './order.processors.js';
import { ORDERS, PAYMENTS, STOCK } from './orders.js';
import { OrdersController } from './orders.controller.js';
import { QueuesController } from './queues.controller.js';
import { ReportsModule } from './report.processor.js';
import { REPORTS } from './reports.js';
import { ReportsController } from './reports.controller.js';
import { ResultsController } from './results.controller.js';
import { SchedulesController } from './schedules.controller.js';
import { TenantProcessor } from './tenant.processor.js';
import { TENANT_GROUPS, TENANTS } from './tenants.js';
import { TenantsController } from './tenants.controller.js';

export interface SampleOptions {
  redisUrl: string;
  /** Key prefix (tests use a random one). Default `sample`. */
  prefix?: string;
  /** Which workers this instance runs (see `workersFromEnv`). Default all. */
  workers?: boolean | string[];
}

/**
 * The `WORKERS` environment variable: `false` for a web instance that only adds jobs, `true` (or
 * unset) for one that runs every worker, `emails,reports` for those queues' workers.
 */
export function workersFromEnv(value: string | undefined): boolean | string[] {
  if (value === undefined || value.trim() === '' || value.trim() === 'true') return true;
  if (value.trim() === 'false') return false;
  return value
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
}

@Module({})
export class AppModule {
  static forRoot({ redisUrl, prefix = 'sample', workers = true }: SampleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: redisUrl },
          prefix,
          defaults: { leaseMs: 30_000, heartbeatTimeoutMs: 5_000 },
          shutdownTimeoutMs: 5_000,
          // One codebase, two deployments: WORKERS=false for the web pods (docs/operations.md).
          workers,
        }),
        WorkQueueModule.registerQueue({
          name: EMAILS,
          maxAttempts: 3,
          backoff: { type: 'exponential', delayMs: 200, maxDelayMs: 5_000 },
          // Results are kept an hour, so GET /jobs/:id shows finished jobs as `completed`.
          storeResults: { ttlMs: 3_600_000 },
          // A digest every minute, once across however many instances run (GET /schedules).
          schedules: [
            { id: 'digest', every: 60_000, name: 'digest', data: { to: 'team@example.com' } },
          ],
        }),
        // Reports are rendered in worker threads (sample/report.processor.ts).
        WorkQueueModule.registerQueue({ name: REPORTS, storeResults: { ttlMs: 3_600_000 } }),
        ReportsModule,
        // Jobs of many customers: fair turns, one at a time and 20/s per customer (docs/groups.md).
        WorkQueueModule.registerQueue({ name: TENANTS, groups: TENANT_GROUPS }),
        // An order flow: the order waits for its payment and stock (POST /orders, GET /orders/:id).
        WorkQueueModule.registerQueue(
          { name: ORDERS, storeResults: { ttlMs: 3_600_000 } },
          { name: PAYMENTS, maxAttempts: 3 },
          { name: STOCK },
        ),
        WorkQueueModule.registerFlowProducer({ queues: [ORDERS, PAYMENTS, STOCK] }),
        TerminusModule,
        WorkQueueMetricsModule.forRoot(),
      ],
      controllers: [
        JobsController,
        TenantsController,
        SchedulesController,
        HealthController,
        MetricsController,
        // Queue administration, and waiting for a job's result.
        QueuesController,
        ResultsController,
        ReportsController,
        OrdersController,
      ],
      providers: [
        EmailProcessor,
        TenantProcessor,
        WorkQueueHealthIndicator,
        EmailEventsListener,
        OrderProcessor,
        PaymentProcessor,
        StockProcessor,
      ],
    };
  }
}
