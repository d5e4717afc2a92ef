import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { WorkQueueHealthIndicator } from '../src/health/index.js';

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly queues: WorkQueueHealthIndicator,
  ) {}

  /** 200 when Redis answers and the backlog is sane; 503 with details otherwise. */
  @Get()
  @HealthCheck()
  check(): Promise<HealthCheckResult> {
    return this.health.check([
      () =>
        this.queues.isHealthy('queues', { maxPending: 100_000, maxDead: 1_000, timeoutMs: 1_000 }),
    ]);
  }
}
