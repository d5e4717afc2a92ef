/**
 * Helpers for the isAlive() tests (test/e2e/nest-health-liveness*.test.ts): Nest apps with the
 * health module and a `/health/live` route on a given Redis, and the liveness they report.
 */
import { performance } from 'node:perf_hooks';
import { Controller, Get, Module, type INestApplication, type Type } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import {
  WorkQueueHealthIndicator,
  WorkQueueHealthModule,
  type WorkQueueLivenessDetails,
} from '../../src/health/index.js';
import { WorkQueueModule, type RegisterQueueOptions } from '../../src/index.js';
import { uniqueName } from './keys.js';
import { MemoryLogger, nestAppsClosedAfterEach } from './nest-app.js';
import { waitFor } from './wait.js';

/** Short, so that the tests see the stalls; the default is 30 s. */
export const STALLED_AFTER_MS = 600;

export type Liveness = WorkQueueLivenessDetails & { status: 'up' | 'down' };

@Controller('health')
class ProbeController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly queues: WorkQueueHealthIndicator,
  ) {}

  @Get('live')
  @HealthCheck()
  live() {
    return this.health.check([
      () => this.queues.isAlive('queues', { stalledAfterMs: STALLED_AFTER_MS, timeoutMs: 500 }),
    ]);
  }
}

/** Call at the top of a test file: every app started is closed after each test. */
export function livenessApps(redisUrl: () => string) {
  const startApp = nestAppsClosedAfterEach();

  /** A Nest app with the health module and these processors (idle waits of 1 s). */
  async function start(
    providers: Type[],
    queues: RegisterQueueOptions[] = [{ name: 'work' }],
  ): Promise<INestApplication> {
    @Module({
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: redisUrl() },
          prefix: uniqueName('live'),
          logger: new MemoryLogger(),
          defaults: { idleTimeoutMs: 1_000 },
        }),
        WorkQueueModule.registerQueue(...queues),
        TerminusModule,
        WorkQueueHealthModule,
      ],
      providers,
      controllers: [ProbeController],
    })
    class AppModule {}
    return startApp({ imports: [AppModule] });
  }

  async function alive(app: INestApplication, stalledAfterMs = STALLED_AFTER_MS) {
    const indicator = app.get(WorkQueueHealthIndicator);
    const result = await indicator.isAlive('queues', { stalledAfterMs, timeoutMs: 500 });
    return result.queues as unknown as Liveness;
  }

  return {
    start,
    alive,
    isDown: async (app: INestApplication) => (await alive(app)).status === 'down',
    isUp: async (app: INestApplication) => (await alive(app)).status === 'up',
  };
}

/** Wait until `ms` have passed since `since` (for claims about elapsed time). */
export const passed = (since: number, ms: number) =>
  waitFor(() => performance.now() - since > ms, { timeoutMs: ms + 5_000, what: `${ms} ms` });
