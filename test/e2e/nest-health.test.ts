import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Module, Query, type INestApplication } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Redis } from 'ioredis';
import request from 'supertest';
import { WorkQueueHealthIndicator, WorkQueueHealthModule } from '../../src/health/index.js';
import { getQueueToken, WorkQueueModule, type WorkQueue } from '../../src/index.js';
import { MemoryLogger, startNestApp } from '../support/nest-app.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

const TIMEOUT_MS = 500;
/** Every answer must come within the check's timeout plus this much. */
const SLACK_MS = 1_000;

@Controller('health')
class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly queues: WorkQueueHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check(@Query('maxDead') maxDead?: string, @Query('strict') strict?: string) {
    return this.health.check([
      () =>
        this.queues.isHealthy('queues', {
          timeoutMs: TIMEOUT_MS,
          maxDead: maxDead === undefined ? undefined : Number(maxDead),
          requireNoEviction: strict === '1',
        }),
    ]);
  }
}

let redis: RedisHandle;
let app: INestApplication;
let admin: Redis;
const logger = new MemoryLogger();

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  admin.on('error', () => undefined);
  @Module({
    imports: [
      WorkQueueModule.forRoot({ connection: { url: redis.url }, logger, cleaner: false }),
      WorkQueueModule.registerQueue({ name: 'mail' }, { name: 'reports' }),
      TerminusModule,
      WorkQueueHealthModule,
    ],
    controllers: [HealthController],
  })
  class AppModule {}
  app = await startNestApp({ imports: [AppModule] });
});

afterAll(async () => {
  await app?.close();
  // QUIT from a connected client: disconnect() on a socket that already closed (Redis was
  // restarted) would leave ioredis' 2 s force-close timer behind.
  await admin?.ping().catch(() => undefined);
  await admin?.quit().catch(() => admin.disconnect());
  await redis?.dispose();
});

/** GET /health, asserting that the answer came in bounded time. */
async function health(query = '') {
  const t0 = Date.now();
  const res = await request(app.getHttpServer()).get(`/health${query}`);
  expect(Date.now() - t0).toBeLessThan(TIMEOUT_MS + SLACK_MS);
  return res;
}

describe('WorkQueueHealthIndicator over HTTP (Terminus)', () => {
  it('is up with Redis and queue details', async () => {
    const mail = app.get<WorkQueue>(getQueueToken('mail'));
    await mail.add({ to: 'a' });
    await mail.add({ to: 'b' }, { delayMs: 60_000 });
    const res = await health();
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
    const details = res.body.info.queues;
    expect(details).toMatchObject({
      status: 'up',
      redisVersion: expect.stringMatching(/^\d+\.\d+/),
      maxmemoryPolicy: 'noeviction',
      queues: {
        mail: { pending: 1, delayed: 1, leased: 0, dead: 0, workers: 0, paused: false },
        reports: { pending: 0, delayed: 0, leased: 0, dead: 0, workers: 0, paused: false },
      },
    });
    expect(typeof details.latencyMs).toBe('number');
    expect(details.evictionWarning).toBeUndefined();
  });

  it('reports a paused queue as paused, and stays up', async () => {
    const mail = app.get<WorkQueue>(getQueueToken('mail'));
    await mail.pause();
    try {
      const res = await health();
      expect(res.status).toBe(200);
      expect(res.body.info.queues).toMatchObject({
        status: 'up',
        queues: { mail: { paused: true }, reports: { paused: false } },
      });
    } finally {
      await mail.resume();
    }
    expect((await health()).body.info.queues.queues.mail.paused).toBe(false);
  });

  it('is down when a threshold is crossed, naming it', async () => {
    const reports = app.get<WorkQueue>(getQueueToken('reports'));
    await reports.add({});
    const [lease] = await reports.lease();
    await reports.deadLetter(lease!, 'test');
    const res = await health('?maxDead=0');
    expect(res.status).toBe(503);
    expect(res.body.error.queues).toMatchObject({
      status: 'down',
      problems: ['queue "reports": 1 dead jobs, over maxDead 0'],
    });
    expect((await health('?maxDead=1')).status).toBe(200);
  });

  it('flags an eviction policy that can lose jobs; down only when required', async () => {
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const res = await health();
      expect(res.status).toBe(200);
      expect(res.body.info.queues.evictionWarning).toMatch(/allkeys-lru.*noeviction/);
      const strict = await health('?strict=1');
      expect(strict.status).toBe(503);
      expect(strict.body.error.queues.problems).toEqual([
        expect.stringMatching(/maxmemory-policy is 'allkeys-lru'/),
      ]);
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
    }
  });

  it('is down within the timeout when Redis does not answer', async () => {
    await admin.client('PAUSE', 1_500, 'ALL');
    const res = await health();
    expect(res.status).toBe(503);
    expect(res.body.error.queues.message).toBe(
      `Redis is unreachable: Redis did not answer within ${TIMEOUT_MS} ms`,
    );
    await new Promise((r) => setTimeout(r, 1_200)); // let the pause end
    await waitFor(async () => (await health()).status === 200, { timeoutMs: 5_000 });
  });

  it('goes down when Redis stops and up again after it restarts', async () => {
    await redis.stop();
    await waitFor(async () => (await health()).status === 503, { what: 'down' });
    const down = await health();
    expect(down.body.error.queues.status).toBe('down');
    expect(down.body.error.queues.message).toMatch(/^Redis is unreachable/);
    expect(logger.messages('error')).toContainEqual(
      expect.stringMatching(/^Redis connection (lost|error: .*); reconnecting$/),
    );

    await redis.restart();
    await waitFor(async () => (await health()).status === 200, { timeoutMs: 10_000, what: 'up' });
    expect(logger.messages('log')).toContain('Redis connection restored');
  });
});
