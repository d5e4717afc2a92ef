/**
 * isAlive() (nestjs-work-queue/health), the liveness check: down only when this process cannot do
 * its work and a restart would help. Here: a lease loop whose calls get unusable replies goes
 * down only after `stalledAfterMs` and up again once it leases; what is not a stall (paused,
 * full, rate-limited, delayed) stays up; bad options are refused with every problem listed.
 * A stopped Redis and a killed heartbeat thread: nest-health-liveness-faults.test.ts.
 */
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { WorkQueueHealthIndicator } from '../../src/health/index.js';
import {
  getQueueToken,
  Process,
  Processor,
  WorkQueueContext,
  WorkQueueError,
  type Job,
  type WorkQueue,
} from '../../src/index.js';
import { livenessApps, passed, STALLED_AFTER_MS } from '../support/nest-liveness.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

let redis: RedisHandle;
const { start, alive, isDown, isUp } = livenessApps(() => redis.url);

beforeAll(async () => {
  redis = await startRedis();
});

afterAll(async () => {
  await redis?.dispose();
});

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
    // The handler's return sends the complete call: behind until Redis answers it.
    await waitFor(async () => (await alive(app)).workers.work?.unansweredMs === 0, {
      what: 'the complete call answered',
    });
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
      'stalledAfterMs must be a positive integer (ms) up to 2147483647, got 0',
      'timeoutMs must be a positive integer (ms) up to 2147483647, got -1',
    ]);
    expect(await refused({ stalledAfterMs: -30_000 })).toEqual([
      'stalledAfterMs must be a positive integer (ms) up to 2147483647, got -30000',
    ]);
    expect(await refused({ stalledAfterMs: '30s' })).toEqual([
      'stalledAfterMs must be a positive integer (ms) up to 2147483647, got "30s"',
    ]);
    // Past a timer's range: Node fired it at once, every PING unanswered, the pod restarted.
    expect(await refused({ timeoutMs: 3e9, stalledAfterMs: 2 ** 31 })).toEqual([
      'stalledAfterMs must be a positive integer (ms) up to 2147483647, got 2147483648',
      'timeoutMs must be a positive integer (ms) up to 2147483647, got 3000000000',
    ]);
    expect(await refused(null)).toEqual([
      'options must be an object { stalledAfterMs?, timeoutMs? }, got null',
    ]);
    // An instance without workers is alive while Redis answers.
    expect(await alive(app)).toMatchObject({ status: 'up', workers: {}, unreachableMs: 0 });
  });
});

describe('isHealthy(): bad input', () => {
  it('refuses bad options, every problem listed, instead of reporting an outage', async () => {
    const app = await start([]);
    const indicator = app.get(WorkQueueHealthIndicator);
    const e = await indicator
      .isHealthy('queues', { timeoutMs: -5, maxDead: 'x', minWorkers: NaN, maxWait: 1 } as never)
      .then(
        () => undefined,
        (err: unknown) => err,
      );
    expect(e).toBeInstanceOf(WorkQueueError);
    expect(e).toMatchObject({ code: 'INVALID_OPTIONS' });
    expect((e as WorkQueueError).problems).toEqual([
      'maxWait is not a known option',
      'maxDead must be a non-negative integer, got "x"',
      'minWorkers must be a non-negative integer, got NaN',
      'timeoutMs must be a positive integer (ms) up to 2147483647, got -5',
    ]);
    expect(
      (await indicator.isHealthy('queues', { maxDead: 0, timeoutMs: 1_000 })).queues.status,
    ).toBe('up');
  });
});
