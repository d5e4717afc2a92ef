/**
 * Worker runtime: start-up. A worker leases before its event subscription is ready, and catches
 * up on what the channel said before it listened (a cancel, a queue resume); a worker that
 * parks at once is woken by the next add; close() right after construction is clean.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis, type RedisOptions } from 'ioredis';
import { WorkQueue, type WorkQueueOptions } from '../../../lib/index.js';
import { heartbeatThreadStats } from '../../../lib/worker/heartbeat-testing.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { deferred, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
const gated: Redis[] = [];
afterAll(async () => {
  await Promise.all(gated.map((c) => c.quit().catch(() => c.disconnect())));
  await fx.cleanup();
});
const worker = workersClosedAfterEach();

/**
 * A client whose duplicates (the worker's own connections) send SUBSCRIBE only once `open`
 * resolves: the worker's event subscription is not ready until the test says so.
 */
function gatedClient(open: Promise<void>): Redis {
  class Gated extends Redis {
    override duplicate(override?: Partial<RedisOptions>): Redis {
      const c = super.duplicate(override);
      const subscribe = c.subscribe.bind(c) as (...channels: string[]) => Promise<unknown>;
      (c as unknown as { subscribe: typeof subscribe }).subscribe = async (...channels) => {
        await open;
        return subscribe(...channels);
      };
      return c;
    }
  }
  const c = new Gated(testRedisUrl(), { maxRetriesPerRequest: 3 });
  gated.push(c);
  return c;
}

/** The same queue on a connection of its own (the producer's view). */
function producerOf<T>(q: WorkQueue<T>, options: WorkQueueOptions = {}): WorkQueue<T> {
  return new WorkQueue<T>(fx.client(), q.name, {
    logger: false,
    prefix: q.options.prefix,
    ...options,
  });
}

describe('Worker start-up', () => {
  it('startWaits names what an unfinished start() waits for (a start that timed out says it)', async () => {
    const gate = deferred();
    const c = new Redis(testRedisUrl());
    gated.push(c);
    // The queue's check of Redis (INFO) is answered only once the test says so.
    const info = c.info.bind(c) as (...a: unknown[]) => Promise<string>;
    (c as unknown as { info: typeof info }).info = async (...a) => {
      await gate.promise;
      return info(...a);
    };
    const q = fx.queue<string>({}, c);
    const w = worker(q, () => 'x', { autostart: false });
    expect(w.startWaits).toEqual([]);
    const started = w.start();
    await waitFor(() => w.startWaits.includes('redis check'), { what: 'start waiting on Redis' });
    expect(w.startWaits).toEqual(['redis check']);
    gate.resolve();
    await started;
    expect(w.startWaits).toEqual([]);
    await w.close();
  });

  it('runs a waiting job before its subscription is ready; a cancel published before it subscribed still aborts the run', async () => {
    const gate = deferred();
    const q = fx.queue<string>({}, gatedClient(gate.promise));
    const producer = producerOf(q, { commandTimeoutMs: 1_000 });
    const { id } = await producer.add('first');
    let signal: AbortSignal | undefined;
    const aborted = deferred();
    const w = worker(q, async (job) => {
      signal = job.signal;
      await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => resolve()));
      aborted.resolve();
    });
    await waitFor(() => signal, { what: 'the job started, subscription held' });
    // Cancelled while the worker does not listen yet: the notice is published to nobody.
    const cancelled = producer.cancel(id);
    await waitFor(async () => (await producer.getJob(id)) === null, { what: 'job cancelled' });
    expect(signal!.aborted).toBe(false);
    gate.resolve();
    await aborted.promise;
    expect(await cancelled).toBe(true);
    expect((await producer.counts()).leased).toBe(0);
    await w.close();
  });

  it('paused queue at start: a resume published before the subscription is heard by one lease call after it', async () => {
    const gate = deferred();
    const q = fx.queue<string>({}, gatedClient(gate.promise));
    const producer = producerOf(q);
    await producer.pause();
    await producer.add('after resume');
    const ran: string[] = [];
    // Idle timeout long enough that only hearing the resume can start the job in time.
    worker(q, (job) => void ran.push(job.data), { idleTimeoutMs: 60_000 });
    await waitFor(async () => (await producer.counts()).workers === 1, { what: 'worker started' });
    await producer.resume();
    gate.resolve();
    await waitFor(() => ran.length === 1, { what: 'job run after the resume' });
    expect(ran).toEqual(['after resume']);
  });

  it('a worker that parks at once is woken by an add made right after its start', async () => {
    const gate = deferred();
    const q = fx.queue<number>({}, gatedClient(gate.promise));
    const producer = producerOf(q);
    const ran: number[] = [];
    const w = worker(q, (job) => void ran.push(job.data), { idleTimeoutMs: 60_000 });
    await w.start();
    await producer.add(1);
    await waitFor(() => ran.length === 1, { what: 'woken with the subscription held' });
    gate.resolve();
    await producer.add(2);
    await waitFor(() => ran.length === 2, { what: 'woken again once subscribed' });
    expect(ran).toEqual([1, 2]);
  });

  it('close() right after construction, and right after start(): clean, the job stays pending', async () => {
    const q = fx.queue<string>();
    await q.add('left alone');
    for (const startFirst of [false, true]) {
      const errors: unknown[] = [];
      const w = worker(q, () => 'ran', { autostart: !startFirst });
      w.on('error', (e) => errors.push(e));
      if (startFirst) {
        await w.start();
        await w.close({ timeoutMs: 0 });
      } else {
        await w.close();
      }
      expect(errors).toEqual([]);
      const counts = await q.counts();
      expect(counts.workers).toBe(0);
      expect(counts.leased).toBe(0);
    }
    // Whatever the start did, the job is still there, once: pending, or completed by a run.
    expect((await q.counts()).pending).toBeLessThanOrEqual(1);
    await waitFor(() => heartbeatThreadStats().threads === 0, { what: 'no heartbeat thread' });
  });
  it('pause() and resume() before start() finished: no lease call goes out before the registration', async () => {
    const q = fx.queue<string>();
    await q.addBulk(['a', 'b', 'c'].map((data) => ({ data })));
    const ids: string[] = [];
    const real = q.completeAndLease.bind(q);
    q.completeAndLease = ((items, next, w) => {
      if (next) ids.push(next.workerId ?? '(none)');
      return real(items, next, w);
    }) as typeof q.completeAndLease;
    const errors: unknown[] = [];
    const done: string[] = [];
    const w = worker(q, async (job) => void done.push(job.data), { concurrency: 2 });
    w.on('error', (e) => errors.push(e));
    // Autostarted: its registration is on its way.
    w.pause();
    w.resume();
    await w.start();
    await waitFor(() => done.length === 3, { what: 'the three jobs' });
    await waitFor(async () => (await q.counts()).leased === 0, { what: 'their completes' });
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids)).toEqual(new Set([w.workerId]));
    expect(errors).toEqual([]);
  });
});
