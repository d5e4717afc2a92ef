/**
 * Worker runtime: connections. An idle worker reconnects on its own when Redis drops its
 * connections (CLIENT KILL) or restarts (AOF on, so the queue survives), and resumes its
 * blocking wait and its event subscription.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../../lib/index.js';
import type { Handler, Job, WorkerOptions } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';
import { deferred } from '../../support/worker.js';

let redis: RedisHandle;
let admin: Redis;
const clients: Redis[] = [];
const workers: Worker<never, never>[] = [];

beforeAll(async () => {
  redis = await startRedis({ appendonly: true, appendfsync: 'always' });
  admin = new Redis(redis.url);
  admin.on('error', () => undefined);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: 0 })));
});
afterAll(async () => {
  await Promise.all([admin, ...clients].map((c) => c.quit().catch(() => c.disconnect())));
  await redis.dispose();
});

function client(): Redis {
  const c = new Redis(redis.url);
  c.on('error', () => undefined);
  clients.push(c);
  return c;
}

/** The worker's queue and, on a connection of its own, the producer's view of it. */
function queues<T>(): { q: WorkQueue<T>; producer: WorkQueue<T> } {
  const name = uniqueName();
  return {
    q: new WorkQueue<T>(client(), name, { logger: false }),
    producer: new WorkQueue<T>(client(), name, { logger: false }),
  };
}

function worker<T>(q: WorkQueue<T>, h: Handler<T, unknown>, o: WorkerOptions = {}): Worker<T> {
  const w = new Worker(q, h, o);
  workers.push(w as unknown as Worker<never, never>);
  w.on('error', () => undefined); // connection errors are expected here
  return w;
}

/** A started worker (concurrency 4, idle timeout 30 s so only a wake-up can start a job). */
async function idleWorker(q: WorkQueue<number>, seen: number[]): Promise<Worker<number>> {
  const w = worker(q, (job) => void seen.push(job.data), {
    concurrency: 4,
    idleTimeoutMs: 30_000,
  });
  await w.start();
  return w;
}

/** CLIENT KILL TYPE <type>; resolves how many connections Redis dropped. */
const killed = async (type: 'normal' | 'pubsub') =>
  Number(await admin.call('CLIENT', 'KILL', 'TYPE', type));

describe('Worker connections (private Redis)', () => {
  it('CLIENT KILL TYPE normal while idle: reconnects, jobs added afterwards are processed', async () => {
    const { q, producer } = queues<number>();
    const seen: number[] = [];
    await idleWorker(q, seen);
    await producer.add(0);
    await waitFor(() => seen.length === 1, { what: 'first job' });
    await waitFor(async () => (await admin.llen(q.keys.wake)) === 0, { what: 'worker idle' });

    // The worker's blocking connection, its queue client, the producer, the heartbeat thread.
    expect(await killed('normal')).toBeGreaterThanOrEqual(3);
    await producer.addBulk([1, 2, 3].map((data) => ({ data })));
    await waitFor(() => seen.length === 4, { what: 'jobs after CLIENT KILL', timeoutMs: 10_000 });
    expect(seen.sort()).toEqual([0, 1, 2, 3]);
    // A handler returns before its completion is written (completions are batched): wait for it.
    await waitFor(async () => (await producer.counts()).leased === 0, { what: 'completions' });
    expect(await producer.counts()).toMatchObject({ pending: 0, leased: 0, workers: 1 });
  });

  it('a reconcile Redis refuses (NOREPLICAS) is tried again with a backoff, not in a loop', async () => {
    const { q, producer } = queues<number>();
    const errors: unknown[] = [];
    const w = worker(q, () => undefined, { idleTimeoutMs: 30_000, cleanIntervalMs: 0 });
    w.on('error', (e) => errors.push(e));
    await w.start();
    // Writes refused from now on (as on a master that lost its only replica after a failover),
    // and the worker's connection dropped: its reconnect asks for a reconcile, refused too.
    await admin.config('SET', 'min-replicas-to-write', '1');
    try {
      expect(await killed('normal')).toBeGreaterThanOrEqual(1);
      await waitFor(() => errors.some((e) => /NOREPLICAS/.test(String(e))), {
        what: 'a refused reconcile',
        timeoutMs: 10_000,
      });
      const before = errors.length;
      await new Promise((r) => setTimeout(r, 1_000));
      // Backing off from 50 ms to 2 s: a handful a second (it was thousands).
      expect(errors.length - before).toBeLessThan(30);
    } finally {
      await admin.config('SET', 'min-replicas-to-write', '0');
    }
    // Once Redis takes writes again, the worker works.
    await producer.add(7);
    await waitFor(
      async () => (await producer.counts()).pending + (await producer.counts()).leased === 0,
      {
        what: 'the job processed after writes came back',
        timeoutMs: 10_000,
      },
    );
  });

  it('CLIENT KILL TYPE pubsub: jobs still processed, cancel notifications still arrive', async () => {
    const { q, producer } = queues<string>();
    const runs: Job<string>[] = [];
    const gate = deferred<string>();
    const w = worker(
      q,
      async (job) => {
        runs.push(job);
        return job.data === 'hold' ? gate.promise : job.data;
      },
      { concurrency: 2, idleTimeoutMs: 30_000 },
    );
    await w.start();
    const channels = async () =>
      Number(((await admin.pubsub('NUMSUB', q.keys.noticeChannel)) as [string, number])[1]);
    // start() does not wait for the subscription (its own connection, made meanwhile).
    await waitFor(async () => (await channels()) === 1, { what: 'the notice channel subscribed' });

    expect(await killed('pubsub')).toBeGreaterThanOrEqual(1);
    await producer.addBulk([{ data: 'a' }, { data: 'b' }]);
    await waitFor(() => runs.length === 2, { what: 'jobs after killing the subscriber' });

    // The subscription comes back by itself, and cancel still reaches the running job.
    await waitFor(async () => (await channels()) === 1, { what: 'resubscribed' });
    const { id } = await producer.add('hold');
    await waitFor(() => runs.length === 3, { what: 'held job started' });
    expect(await producer.cancel(id)).toBe(true);
    await waitFor(() => runs[2]!.signal.aborted, { what: 'cancel reached the worker' });
    gate.resolve('late');
  });

  it('redis-server restart (AOF) while idle: jobs added after the restart are processed', async () => {
    const { q, producer } = queues<number>();
    const seen: number[] = [];
    await idleWorker(q, seen);
    await producer.add(0);
    await waitFor(() => seen.length === 1, { what: 'first job' });
    await waitFor(async () => (await admin.llen(q.keys.wake)) === 0, { what: 'worker idle' });
    // One job waits for later, to prove the queue itself survived.
    const kept = await producer.add(100, { delayMs: 60_000 });

    await redis.kill();
    await redis.restart();
    await waitFor(async () => (await producer.counts()).delayed === 1, {
      what: 'queue back from the AOF',
      timeoutMs: 10_000,
    });
    await producer.addBulk([1, 2, 3].map((data) => ({ data })));
    await waitFor(() => seen.length === 4, { what: 'jobs after the restart', timeoutMs: 15_000 });
    expect(seen.sort()).toEqual([0, 1, 2, 3]);
    expect(await producer.getJob(kept.id)).toMatchObject({ state: 'delayed', data: 100 });
    // Its heartbeat thread reconnected too: the worker is alive in the registry.
    await waitFor(async () => (await producer.counts()).workers === 1, {
      what: 'worker heartbeat after restart',
    });
  });
});
