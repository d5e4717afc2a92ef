/**
 * isAlive() (nestjs-work-queue/health), the liveness check: down only when this process cannot do
 * its work and a restart would help. Each cause is made to happen for real in a Nest app on a
 * private Redis — a lease loop whose calls get unusable replies, a stopped Redis, a killed
 * heartbeat thread whose replacement does not come — and each goes down only after
 * `stalledAfterMs`, then up again on recovery. What is not a stall (paused, full, rate-limited,
 * delayed) stays up; bad options are refused with every problem listed.
 */
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Controller, Get, Module, type INestApplication, type Type } from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Redis } from 'ioredis';
import request from 'supertest';
import {
  heartbeatThreadStats,
  holdHeartbeatThread,
  killHeartbeatThread,
} from '../../lib/worker/heartbeat.js';
import {
  WorkQueueHealthIndicator,
  WorkQueueHealthModule,
  type WorkQueueLivenessDetails,
} from '../../src/health/index.js';
import {
  getQueueToken,
  Process,
  Processor,
  WorkQueueContext,
  WorkQueueError,
  WorkQueueModule,
  type Job,
  type RegisterQueueOptions,
  type WorkQueue,
} from '../../src/index.js';
import { uniqueName } from '../support/keys.js';
import { MemoryLogger, nestAppsClosedAfterEach } from '../support/nest-app.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

/** Short, so that the tests see the stalls; the default is 30 s. */
const STALLED_AFTER_MS = 600;

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

let redis: RedisHandle;
const startApp = nestAppsClosedAfterEach();

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.dispose();
});

/** A Nest app with the health module, on the private Redis, with these processors. */
async function start(
  providers: Type[],
  queues: RegisterQueueOptions[] = [{ name: 'work' }],
): Promise<INestApplication> {
  @Module({
    imports: [
      WorkQueueModule.forRoot({
        connection: { url: redis.url },
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

type Liveness = WorkQueueLivenessDetails & { status: 'up' | 'down' };

async function alive(app: INestApplication, stalledAfterMs = STALLED_AFTER_MS): Promise<Liveness> {
  const indicator = app.get(WorkQueueHealthIndicator);
  const result = await indicator.isAlive('queues', { stalledAfterMs, timeoutMs: 500 });
  return result.queues as unknown as Liveness;
}

const isDown = async (app: INestApplication) => (await alive(app)).status === 'down';
const isUp = async (app: INestApplication) => (await alive(app)).status === 'up';

/** Wait until `ms` have passed since `since` (the claim under test is about elapsed time). */
const passed = (since: number, ms: number) =>
  waitFor(() => performance.now() - since > ms, { timeoutMs: ms + 5_000, what: `${ms} ms` });

describe('isAlive(): a stuck lease loop', () => {
  it('jobs wait while the lease calls get unusable replies: up, down after stalledAfterMs, up once it leases again', async () => {
    const done: string[] = [];
    @Processor('work')
    class WorkProcessor {
      @Process()
      handle(job: Job) {
        done.push(job.id);
      }
    }
    const app = await start([WorkProcessor]);
    const queue = app.get<WorkQueue>(getQueueToken('work'));
    await queue.add('first');
    await waitFor(() => done.length === 1, { what: 'the first job' });
    expect(await alive(app)).toMatchObject({
      status: 'up',
      workers: { work: { state: 'ok', unansweredMs: 0 } },
      unreachableMs: 0,
    });

    // Sabotage: every reply of the worker's lease call is unusable (as a broken script's would be).
    const real = queue.completeAndLease.bind(queue);
    let refused = 0;
    queue.completeAndLease = () => {
      refused++;
      return Promise.reject(new WorkQueueError('SCRIPT_ERROR', 'complete: unusable reply'));
    };
    const since = performance.now();
    await queue.addBulk([{ data: 'a' }, { data: 'b' }, { data: 'c' }]);
    await waitFor(() => refused > 0, { what: 'a refused lease call' });
    // Behind, but not for stalledAfterMs yet (a generous one here): up.
    expect(await alive(app, 60_000)).toMatchObject({ status: 'up' });
    await waitFor(() => isDown(app), { what: 'down' });
    const down = await alive(app);
    expect(performance.now() - since).toBeGreaterThan(STALLED_AFTER_MS);
    expect(down.workers.work).toMatchObject({ state: 'stalled', pending: expect.any(Number) });
    expect(down.workers.work!.pending).toBeGreaterThan(0);
    expect(down.problems).toEqual([
      expect.stringMatching(
        /^queue "work": \d+ jobs pending while its worker's lease calls have gone unanswered for \d+ ms$/,
      ),
    ]);
    // The Redis connection itself is fine.
    expect(down.unreachableMs).toBe(0);
    const http = await request(app.getHttpServer()).get('/health/live');
    expect(http.status).toBe(503);
    expect(http.body.error.queues.workers.work.state).toBe('stalled');

    queue.completeAndLease = real;
    await waitFor(() => isUp(app), { what: 'up again' });
    await waitFor(() => done.length === 4, { what: 'the waiting jobs' });
    expect((await request(app.getHttpServer()).get('/health/live')).status).toBe(200);
  });

  it('a paused queue with failing lease calls is paused, not stalled', async () => {
    @Processor('work')
    class WorkProcessor {
      @Process()
      handle() {}
    }
    const app = await start([WorkProcessor]);
    const queue = app.get<WorkQueue>(getQueueToken('work'));
    queue.completeAndLease = () =>
      Promise.reject(new WorkQueueError('SCRIPT_ERROR', 'complete: unusable reply'));
    await queue.addBulk([{ data: 'a' }, { data: 'b' }, { data: 'c' }]);
    await queue.pause();
    await passed(performance.now(), STALLED_AFTER_MS * 2);
    const seen = await alive(app);
    expect(seen).toMatchObject({ status: 'up', workers: { work: { state: 'paused' } } });
    expect(seen.workers.work!.unansweredMs).toBeGreaterThan(STALLED_AFTER_MS);
    await queue.resume();
    await waitFor(() => isDown(app), { what: 'down once resumed' });
  });
});

describe('isAlive(): what is not a stall', () => {
  it('paused worker, full worker, rate limit, delayed jobs: up past stalledAfterMs', async () => {
    let release!: () => void;
    const running = new Promise<void>((r) => (release = r));
    let started = 0;
    @Processor('full', { concurrency: 1, prefetch: 0 })
    class FullProcessor {
      @Process()
      async handle() {
        started++;
        await running;
      }
    }
    @Processor('limited')
    class LimitedProcessor {
      @Process()
      handle() {}
    }
    @Processor('later')
    class LaterProcessor {
      @Process()
      handle() {}
    }
    @Processor('held')
    class HeldProcessor {
      @Process()
      handle() {}
    }
    const app = await start(
      [FullProcessor, LimitedProcessor, LaterProcessor, HeldProcessor],
      [
        { name: 'full' },
        { name: 'limited', limiter: { max: 1, durationMs: 60_000 } },
        { name: 'later' },
        { name: 'held' },
      ],
    );
    const q = (name: string) => app.get<WorkQueue>(getQueueToken(name));
    app.get(WorkQueueContext).getWorker('held')!.pause();
    await q('full').addBulk([{ data: 1 }, { data: 2 }]);
    await q('limited').addBulk([{ data: 1 }, { data: 2 }, { data: 3 }]);
    await q('later').add('x', { delayMs: 60_000 });
    await q('held').add('x');
    await waitFor(() => started === 1, { what: 'the long job' });
    await waitFor(async () => (await q('limited').counts()).pending === 2, { what: 'limited' });
    await passed(performance.now(), STALLED_AFTER_MS * 2);

    const seen = await alive(app);
    expect(seen).toMatchObject({
      status: 'up',
      workers: {
        full: { state: 'ok' },
        limited: { state: 'ok' },
        later: { state: 'ok' },
        held: { state: 'paused' },
      },
    });
    expect(seen.problems).toBeUndefined();
    // A call may be on its way as we look, never one unanswered for long.
    for (const w of Object.values(seen.workers)) {
      expect(w.unansweredMs).toBeLessThan(STALLED_AFTER_MS);
    }
    expect((await q('full').counts()).pending).toBe(1);
    expect((await q('held').counts()).pending).toBe(1);
    release();
  });
});

describe('isAlive(): Redis unreachable', () => {
  it('does not wait for a Redis that does not answer: its PING is bounded by timeoutMs', async () => {
    const app = await start([]);
    expect(await alive(app)).toMatchObject({ status: 'up', unreachableMs: 0 });
    const admin = new Redis(redis.url);
    try {
      await admin.client('PAUSE', 3_000, 'ALL');
      // Answered while Redis is paused: the check gave up on its PING (so not yet reachable).
      const seen = await alive(app, 60_000);
      expect(seen.status).toBe('up');
      expect(seen.unreachableMs).toBeGreaterThan(0);
      await waitFor(async () => (await alive(app)).unreachableMs === 0, {
        timeoutMs: 10_000,
        what: 'reachable after the pause',
      });
    } finally {
      await admin.quit();
    }
  });

  it('stays up for an outage shorter than stalledAfterMs, is down after it, up once Redis is back', async () => {
    const done: unknown[] = [];
    @Processor('work')
    class WorkProcessor {
      @Process()
      handle(job: Job) {
        done.push(job.data);
      }
    }
    const app = await start([WorkProcessor]);
    expect(await alive(app)).toMatchObject({ status: 'up', unreachableMs: 0 });

    await redis.stop();
    await waitFor(async () => (await alive(app, 60_000)).unreachableMs > 0, {
      what: 'the outage noticed',
    });
    // A blip (here: shorter than a generous stalledAfterMs) is not a reason to restart.
    expect(await alive(app, 60_000)).toMatchObject({ status: 'up' });
    await waitFor(() => isDown(app), { what: 'down' });
    const down = await alive(app);
    expect(down.unreachableMs).toBeGreaterThanOrEqual(STALLED_AFTER_MS);
    expect(down.problems).toEqual([
      expect.stringMatching(/^the Redis connection has not reached Redis for \d+ ms$/),
    ]);

    await redis.restart();
    await waitFor(() => isUp(app), { timeoutMs: 10_000, what: 'up again' });
    expect((await alive(app)).unreachableMs).toBe(0);
    await app.get<WorkQueue>(getQueueToken('work')).add('after');
    await waitFor(() => done.includes('after'), { timeoutMs: 10_000, what: 'a job after' });
  });
});

describe('isAlive(): the heartbeat thread', () => {
  /** The app's worker's heartbeat, as isAlive reports it. */
  const beat = async (app: INestApplication) => (await alive(app)).workers.work!;

  it('killed: the worker starts a new thread and stays alive', async () => {
    @Processor('work')
    class WorkProcessor {
      @Process()
      handle() {}
    }
    const app = await start([WorkProcessor]);
    const worker = app.get(WorkQueueContext).getWorker('work')!;
    const errors: unknown[] = [];
    worker.on('error', (e) => errors.push(e));
    await waitFor(() => heartbeatThreadStats().threads === 1, { what: 'the thread' });
    await waitFor(async () => (await beat(app)).heartbeat === 'thread', { what: 'thread beats' });

    await killHeartbeatThread();
    await waitFor(() => errors.length > 0, { what: 'the death reported' });
    expect(errors).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/heartbeat thread exited/) }),
    ]);
    await waitFor(() => heartbeatThreadStats().threads === 1, { what: 'a new thread' });
    await waitFor(async () => (await beat(app)).heartbeatLostMs === 0, { what: 'it beats' });
    expect(await alive(app)).toMatchObject({
      status: 'up',
      workers: { work: { heartbeat: 'thread', heartbeatLostMs: 0 } },
    });
  });

  it('killed and not replaced: down after stalledAfterMs (main-thread beats keep the worker registered), up once a new thread beats', async () => {
    @Processor('work')
    class WorkProcessor {
      @Process()
      handle() {}
    }
    const app = await start([WorkProcessor]);
    const worker = app.get(WorkQueueContext).getWorker('work')!;
    worker.on('error', () => undefined);
    await waitFor(async () => (await beat(app)).heartbeat === 'thread', { what: 'thread beats' });

    // The replacement cannot start until released.
    let release!: () => void;
    holdHeartbeatThread(new Promise<void>((r) => (release = r)));
    await killHeartbeatThread();
    expect(heartbeatThreadStats().threads).toBe(0);
    expect((await beat(app)).heartbeat).toBe('main thread');
    await waitFor(() => isDown(app), { what: 'down' });
    const down = await alive(app);
    expect(down.workers.work!.heartbeatLostMs).toBeGreaterThanOrEqual(STALLED_AFTER_MS);
    expect(down.problems).toEqual([
      expect.stringMatching(
        /^queue "work": its worker's heartbeat thread died \d+ ms ago and has not been replaced/,
      ),
    ]);
    // Meanwhile the main thread beats: the worker is not reclaimed as dead.
    const queue = app.get<WorkQueue>(getQueueToken('work'));
    expect((await queue.counts()).workers).toBe(1);
    expect((await queue.clean()).deadWorkers).toBe(0);

    release();
    await waitFor(() => isUp(app), { what: 'up again' });
    expect((await beat(app)).heartbeat).toBe('thread');
    expect(heartbeatThreadStats().threads).toBe(1);
  });
});

describe('isAlive(): bad input', () => {
  it('refuses stalledAfterMs <= 0 and other bad options, every problem listed', async () => {
    const app = await start([]);
    const indicator = app.get(WorkQueueHealthIndicator);
    const refused = async (options: unknown) => {
      try {
        await indicator.isAlive('queues', options as never);
      } catch (e) {
        expect(e).toBeInstanceOf(WorkQueueError);
        expect((e as WorkQueueError).code).toBe('INVALID_OPTIONS');
        return (e as WorkQueueError).problems;
      }
      throw new Error('expected isAlive to refuse its options');
    };
    expect(await refused({ stalledAfterMs: 0, timeoutMs: -1, stalledAfter: 5 })).toEqual([
      'stalledAfter is not a known option',
      'stalledAfterMs must be a positive integer (ms), got 0',
      'timeoutMs must be a positive integer (ms), got -1',
    ]);
    expect(await refused({ stalledAfterMs: -30_000 })).toEqual([
      'stalledAfterMs must be a positive integer (ms), got -30000',
    ]);
    expect(await refused({ stalledAfterMs: '30s' })).toEqual([
      'stalledAfterMs must be a positive integer (ms), got "30s"',
    ]);
    expect(await refused(null)).toEqual([
      'options must be an object { stalledAfterMs?, timeoutMs? }, got null',
    ]);
    // An instance without workers is alive while Redis answers.
    expect(await alive(app)).toMatchObject({ status: 'up', workers: {}, unreachableMs: 0 });
  });
});
