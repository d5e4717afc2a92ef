import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { WorkQueueHealthIndicator } from '../src/health/index.js';

/**
 * Probes (docs/operations.md#kubernetes): `/health/ready` for readiness, `/health/live` for
 * liveness; `/health` is readiness too.
 */
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
    return this.ready();
  }

  /** Readiness: send this instance traffic only while Redis answers and the backlog is sane. */
  @Get('ready')
  @HealthCheck()
  ready(): Promise<HealthCheckResult> {
    return this.health.check([
      () =>
        this.queues.isHealthy('queues', { maxPending: 100_000, maxDead: 1_000, timeoutMs: 1_000 }),
    ]);
  }

  /** Liveness: 503 only when a restart of this instance would help (stalled for 30 s). */
  @Get('live')
  @HealthCheck()
  live(): Promise<HealthCheckResult> {
    return this.health.check([() => this.queues.isAlive('queues', { stalledAfterMs: 30_000 })]);
  }
}
