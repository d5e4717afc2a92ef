/**
 * Hand-off: a job added while a worker is parked (idle, blocked on the wake list) is leased on
 * the spot to "whichever parked worker pops it" and travels whole in the wake entry, so the
 * worker starts it without a lease round trip, then adopts the lease. Proven here: the handler
 * runs before the adoption; nothing is handed off without a parked worker; a popped hand-off
 * nobody adopts comes back at the front without counting an expiry; a busy worker's lease
 * takes a waiting hand-off in its priority turn; cancel before adoption aborts the run; a
 * paused worker gives a hand-off back; leaving or dying removes the worker from the parked set.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import type { Job, LeasedJob, WorkQueue } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { startRedis } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';
import {
  deferred,
  recordEvents,
  waitParked,
  workersClosedAfterEach,
} from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

const parkedKey = (q: WorkQueue) => q.keys.key('parked');

/** Wait until worker `id` is in the queue's parked set. */
const parked = (q: WorkQueue, id: string) => waitParked(fx.client(), q, id);

/** Pretend a worker with id `id` is parked (as its lease call would have marked it). */
async function fakeParked(q: WorkQueue, id: string): Promise<void> {
  await fx.client().zadd(parkedKey(q), Date.now() + 60_000, id);
}

describe('hand-off to a parked worker', () => {
  it('the handler starts without a lease round trip (writes paused), then adopts the lease', async () => {
    // A private Redis: CLIENT PAUSE would stall the other test files on the shared one.
    const redis = await startRedis();
    const admin = new Redis(redis.url);
    const client = new Redis(redis.url);
    try {
      const q = fx.queue<{ n: number }>({}, client);
      let startedAt = 0;
      const calls: boolean[] = [];
      const w = worker(q, async (job) => {
        startedAt = Date.now();
        // Sent before the adoption is done: they wait for it, then succeed.
        calls.push(await job.extend(), await job.progress(0.5));
        return job.data.n;
      });
      const events = recordEvents(w);
      await w.start();
      await waitFor(async () => (await admin.zscore(parkedKey(q), w.workerId)) !== null, {
        what: 'parked',
      });
      // Parked, and its idle wait is in place: a BLMOVE sent after the pause below would wait
      // for the pause itself (it writes), as a lease call would.
      const idleWaitBlocked = async () =>
        String(await admin.client('LIST'))
          .split('\n')
          .some((l) => l.includes(' flags=b ') && l.includes(' cmd=blmove '));
      await waitFor(idleWaitBlocked, { what: "the worker's idle wait (BLMOVE) blocked" });
      const { id } = await q.add({ n: 7 });
      // Scripts wait while writes are paused (for longer than waitFor waits): a lease call (a
      // wake-up, then a lease) could not start the handler. The hand-off arrived with the add,
      // whole; the pause is lifted once the handler runs, so that it can adopt its lease.
      await admin.call('CLIENT', 'PAUSE', '60000', 'WRITE');
      try {
        await waitFor(() => startedAt > 0, { what: 'the handler to start while writes pause' });
      } finally {
        await admin.call('CLIENT', 'UNPAUSE');
      }
      await waitFor(() => events.length === 1, { what: 'completion' });
      expect(calls).toEqual([true, true]);
      expect(events[0]![0]).toBe('completed');
      expect((events[0]![1] as Job).id).toBe(id);
      expect(await q.getJob(id)).toMatchObject({ state: 'completed', data: { n: 7 } });
      // Parked again, nothing left behind.
      await waitFor(async () => (await admin.zscore(parkedKey(q), w.workerId)) !== null, {
        what: 'parked again',
      });
      expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0 });
      expect(await admin.llen(q.keys.wake)).toBe(0);
      await w.close();
    } finally {
      admin.disconnect();
      client.disconnect();
      await redis.dispose();
    }
  });

  it('no parked worker: the job waits in its pending list, not leased', async () => {
    const q = fx.queue();
    await q.add('x');
    expect(await q.counts()).toMatchObject({ pending: 1, leased: 0 });
    // A parked mark that lapsed counts for nothing either.
    await fx.client().zadd(parkedKey(q), Date.now() - 1_000, '9');
    await q.add('y');
    expect(await q.counts()).toMatchObject({ pending: 2, leased: 0 });
  });

  it('a hand-off nobody adopts (its worker died) comes back first in line, no expiry counted', async () => {
    const q = fx.queue<string>({ leaseMs: 300 });
    const admin = fx.client();
    await fakeParked(q, '41');
    const { id } = await q.add('first');
    await q.add('second');
    expect(await q.counts()).toMatchObject({ pending: 1, leased: 1 });
    // The "worker" pops the entry and dies before adopting it.
    const popped = await admin.lpop(q.keys.wake);
    expect(popped).toMatch(new RegExp(`^h${id}:\\d+:\\d+:5:0:\\d+\\n"first"$`));
    expect((await q.repair()).fixes).toEqual([]);
    await waitFor(async () => (await q.clean()).reclaimed === 1, { what: 'hand-off lapsed' });
    const [job] = await q.lease();
    expect(job).toMatchObject({ id, data: 'first', attempt: 1, leaseExpiries: 0 });
  });

  it('a busy worker leases a waiting hand-off in its priority turn, and leaves it when full', async () => {
    const q = fx.queue<string>();
    const admin = fx.client();
    await fakeParked(q, '42');
    await q.add('handed off (p5)');
    await q.add('urgent', { priority: 0 });
    await q.add('later (p5)');
    expect(await admin.lindex(q.keys.wake, 0)).toMatch(/^h/);
    const [first] = await q.lease({ count: 1 });
    expect(first!.data).toBe('urgent');
    // The batch filled up before priority 5: the hand-off stays first in line.
    expect(await admin.lindex(q.keys.wake, 0)).toMatch(/^h/);
    const rest = await q.lease({ count: 5 });
    expect(rest.map((j) => j.data)).toEqual(['handed off (p5)', 'later (p5)']);
    expect(await admin.llen(q.keys.wake)).toBe(0);
  });

  it('a lease that fills before a waiting hand-off, with no worker parked, puts it back pending', async () => {
    const q = fx.queue<string>();
    const admin = fx.client();
    await fakeParked(q, '42');
    const handed = await q.add('handed off (p5)');
    await q.add('urgent', { priority: 0 });
    // The worker it was meant for unparked (a call with no room) before popping it.
    await admin.zrem(parkedKey(q), '42');
    expect((await q.lease({ count: 1 })).map((j) => j.data)).toEqual(['urgent']);
    expect((await q.getJob(handed.id))?.state).toBe('pending');
    for (const e of await admin.lrange(q.keys.wake, 0, -1)) expect(e).not.toMatch(/^h/);
    expect((await q.lease({ count: 5 })).map((j) => j.data)).toEqual(['handed off (p5)']);
  });

  it('adopting checks the hand-off is still there: cancelled first, adoption fails', async () => {
    const q = fx.queue<string>();
    const blocking = fx.client();
    const wid = await q.registerWorker();
    await fakeParked(q, wid);
    const { id } = await q.add('doomed');
    const got = await q.waitForWork(blocking, 1_000, wid);
    expect(got).toMatchObject({ id, data: 'doomed', workerId: wid });
    expect(await q.cancel(id)).toBe(true);
    const r = await q.completeAndLease([], undefined, { adopt: [got as LeasedJob<string>] });
    expect(r.adopted).toEqual([false]);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0 });
  });

  it("a re-sent adoption (its reply lost) answers what the first did: adopted, once ('active' once)", async () => {
    const q = fx.queue<string>();
    const blocking = fx.client();
    const wid = await q.registerWorker();
    await fakeParked(q, wid);
    const { id } = await q.add('handed');
    const got = (await q.waitForWork(blocking, 1_000, wid)) as LeasedJob<string>;
    const own = { adopt: [got], ownResends: true };
    expect((await q.completeAndLease([], undefined, own)).adopted).toEqual([true]);
    // The same call again (ioredis re-sends it after a reconnect): the run is not thrown away.
    expect((await q.completeAndLease([], undefined, own)).adopted).toEqual([true]);
    const events = await fx.client().xrange(q.keys.eventLog, '-', '+');
    expect(events.filter(([, f]) => f.includes('active'))).toHaveLength(1);
    expect((await q.completeAndLease([{ lease: got }], undefined, own)).completed).toEqual([true]);
    expect(await q.getJob(id)).toMatchObject({ state: 'completed', attemptsMade: 1 });
    // Not from a Worker (ownResends off), or after the lease went elsewhere: not adopted.
    expect((await q.completeAndLease([], undefined, { adopt: [got] })).adopted).toEqual([false]);
  });

  it('cancelled between hand-off and adoption: the worker aborts the run, nothing completes', async () => {
    const q = fx.queue<string>();
    let signal: AbortSignal | undefined;
    const w = worker(q, async (job) => {
      signal = job.signal;
      const aborted = new Promise((resolve) => signal!.addEventListener('abort', resolve));
      // Sent before the worker's adoption (which goes out on the next turn of its loop).
      await q.cancel(job.id);
      await aborted;
      return 'late';
    });
    const events = recordEvents(w);
    await w.start();
    await parked(q, w.workerId);
    const { id } = await q.add('x');
    await waitFor(() => events.length > 0, { what: 'lease lost' });
    expect(events.map((e) => e[0])).toEqual(['leaseLost']);
    expect(signal?.aborted).toBe(true);
    expect(await q.getJob(id)).toBeNull();
  });

  it('a paused worker is handed nothing; one that pops a hand-off anyway gives it back', async () => {
    const q = fx.queue<string>();
    const ran: string[] = [];
    const w = worker(q, async (job) => {
      ran.push(job.data);
    });
    await w.start();
    await parked(q, w.workerId);
    w.pause();
    await waitFor(async () => (await fx.client().zscore(parkedKey(q), w.workerId)) === null, {
      what: 'unparked',
    });
    // Marked parked again by hand: its idle wait (still on) pops the hand-off while paused.
    await fakeParked(q, w.workerId);
    const { id } = await q.add('not now');
    await waitFor(async () => (await q.getJob(id))?.state === 'pending', {
      what: 'hand-off released',
    });
    expect(ran).toEqual([]);
    const [job] = await q.lease();
    expect(job).toMatchObject({ id, attempt: 1, leaseExpiries: 0 });
  });

  it('the last parked worker leaving puts a hand-off nobody popped back in line; cancel drops it', async () => {
    const q = fx.queue<string>();
    const admin = fx.client();
    const wid = await q.registerWorker();
    await fakeParked(q, wid);
    const { id } = await q.add('stranded');
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 1 });
    await q.deregisterWorker(wid);
    expect(await q.counts()).toMatchObject({ pending: 1, leased: 0 });
    expect(await admin.lrange(q.keys.wake, 0, -1)).toEqual(['1']);
    expect((await q.lease())[0]).toMatchObject({ id, leaseExpiries: 0 });
    await admin.del(q.keys.wake);
    await fakeParked(q, '43');
    const cancelled = await q.add('cancelled');
    expect(await admin.lindex(q.keys.wake, 0)).toMatch(/^h/);
    expect(await q.cancel(cancelled.id)).toBe(true);
    expect(await admin.llen(q.keys.wake)).toBe(0);
  });

  it('close() and a dead worker reclaim leave no parked mark behind', async () => {
    const q = fx.queue({ heartbeatTimeoutMs: 400 });
    const admin = fx.client();
    const w = worker(q, () => undefined);
    await w.start();
    await parked(q, w.workerId);
    await w.close();
    expect(await admin.zscore(parkedKey(q), w.workerId)).toBeNull();
    // A registered worker that parked and stopped beating: clean() forgets both.
    const dead = await q.registerWorker();
    await fakeParked(q, dead);
    await waitFor(async () => (await q.clean()).deadWorkers === 1, {
      what: 'dead worker reclaimed',
    });
    expect(await admin.exists(parkedKey(q))).toBe(0);
  });

  it('many jobs added to a parked pool run exactly once each, in order per worker', async () => {
    const q = fx.queue<number>();
    const seen: number[] = [];
    const done = deferred();
    for (let i = 0; i < 3; i++) {
      worker(q, async (job) => {
        seen.push(job.data);
        if (seen.length === 300) done.resolve();
      });
    }
    await waitFor(async () => (await fx.client().zcard(parkedKey(q))) === 3, {
      what: 'three parked workers',
    });
    for (let i = 0; i < 300; i++) await q.add(i);
    await done.promise;
    expect([...seen].sort((a, b) => a - b)).toEqual([...Array(300).keys()]);
    await waitFor(async () => (await q.counts()).leased === 0, { what: 'all adopted and done' });
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0 });
  });
});
