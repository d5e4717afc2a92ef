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
import { QueuesController } from './queues.controller.js';
import { ReportsModule } from './report.processor.js';
import { REPORTS } from './reports.js';
import { ReportsController } from './reports.controller.js';
import { ResultsController } from './results.controller.js';
import { SchedulesController } from './schedules.controller.js';

export interface SampleOptions {
  redisUrl: string;
  /** Key prefix (tests use a random one). Default `sample`. */
  prefix?: string;
}

@Module({})
export class AppModule {
  static forRoot({ redisUrl, prefix = 'sample' }: SampleOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: redisUrl },
          prefix,
          defaults: { leaseMs: 30_000, heartbeatTimeoutMs: 5_000 },
          shutdownTimeoutMs: 5_000,
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
        TerminusModule,
        WorkQueueMetricsModule.forRoot(),
      ],
      controllers: [
        JobsController,
        SchedulesController,
        HealthController,
        MetricsController,
        // Queue administration, and waiting for a job's result.
        QueuesController,
        ResultsController,
        ReportsController,
      ],
      providers: [EmailProcessor, WorkQueueHealthIndicator, EmailEventsListener],
    };
  }
}
