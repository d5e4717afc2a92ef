/**
 * isAlive() (nestjs-work-queue/health) under faults made to happen for real in a Nest app on a
 * private Redis: a Redis that does not answer or is stopped, a heartbeat thread killed (replaced,
 * or not replaced while its replacement is held). Each goes down only after `stalledAfterMs`,
 * then up again on recovery.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type INestApplication } from '@nestjs/common';
import { Redis } from 'ioredis';
import {
  heartbeatThreadStats,
  holdHeartbeatThread,
  killHeartbeatThread,
} from '../../lib/worker/heartbeat-testing.js';
import {
  getQueueToken,
  Process,
  Processor,
  WorkQueueContext,
  type Job,
  type WorkQueue,
} from '../../src/index.js';
import { performance } from 'node:perf_hooks';
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

  it('two short outages with Redis answering in between are not one long one', async () => {
    const app = await start([]);
    expect(await alive(app)).toMatchObject({ status: 'up', unreachableMs: 0 }); // (connected)
    const admin = new Redis(redis.url);
    const stalledAfterMs = 2_000;
    try {
      const first = performance.now();
      await admin.client('PAUSE', 1_000, 'ALL');
      expect((await alive(app, stalledAfterMs)).unreachableMs).toBeGreaterThan(0);
      await admin.ping(); // answered once the pause is over (the check's own PING late, before it)
      // No check in between: only its late-answered PING says Redis came back.
      await passed(first, stalledAfterMs + 500);
      await admin.client('PAUSE', 1_000, 'ALL');
      const second = await alive(app, stalledAfterMs);
      // It counted from the first outage's failed PING: ~3 000 ms, down.
      expect(second).toMatchObject({ status: 'up' });
      expect(second.unreachableMs).toBeLessThan(stalledAfterMs);
      await admin.ping();
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
