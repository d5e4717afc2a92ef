/**
 * Worker runtime: the lease pipeline. With a backlog, lease calls share the worker's room
 * (concurrency + prefetch): each asks for at most half of it, so two are in flight while the
 * worker runs the jobs of one reply (no lockstep with Redis) — and what the worker holds plus
 * what it asked for never exceeds the room. close() gives back the jobs of every call still in
 * flight, in order.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { CompleteItem, LeaseOptions, WorkQueue } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { deferred, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach((e) => console.error('worker error', e));

interface Watch {
  /** Lease counts of every call that leased (count > 0), in order. */
  counts: number[];
  /** Most lease calls in flight at once. */
  maxInFlight: number;
  /** Most jobs held (leased to us, not yet completed) plus asked for, at any call's send. */
  maxRoom: number;
  /** Jobs the calls' replies brought. */
  leased: number;
}

/**
 * Watch the worker's calls on `q` (its completeAndLease, wrapped). `hold(n)`, when set, may keep
 * the answer to the n-th leasing call (0-based) back until the promise it returns resolves.
 */
function watchCalls<T>(q: WorkQueue<T>, hold?: (n: number) => Promise<void> | undefined): Watch {
  const w: Watch = { counts: [], maxInFlight: 0, maxRoom: 0, leased: 0 };
  const original = q.completeAndLease.bind(q);
  let inFlight = 0;
  let asked = 0;
  let held = 0;
  q.completeAndLease = async (
    items: ReadonlyArray<CompleteItem<unknown>>,
    next?: LeaseOptions,
    opts?: Parameters<WorkQueue<T>['completeAndLease']>[2],
  ) => {
    const count = next?.count ?? 0;
    held -= items.length; // completed: no longer held once sent
    asked += count;
    w.maxRoom = Math.max(w.maxRoom, held + asked);
    const n = w.counts.length;
    if (count > 0) {
      w.counts.push(count);
      w.maxInFlight = Math.max(w.maxInFlight, ++inFlight);
    }
    try {
      const r = await original(items as ReadonlyArray<CompleteItem<unknown>>, next, opts);
      if (count > 0) await hold?.(n);
      held += r.jobs.length;
      w.leased += r.jobs.length;
      return r;
    } finally {
      asked -= count;
      if (count > 0) inFlight--;
    }
  };
  return w;
}

describe('Worker lease pipeline', () => {
  it('with a backlog, two lease calls in flight, each for half the room; held + asked never above it', async () => {
    const q = fx.queue<number>();
    const JOBS = 400;
    await q.addBulk(Array.from({ length: JOBS }, (_, i) => ({ data: i })));
    const calls = watchCalls(q);
    let done = 0;
    let active = 0;
    let maxActive = 0;
    // Synchronous handlers: a reply's jobs all finish within one turn of the event loop.
    const w = worker(
      q,
      () => {
        maxActive = Math.max(maxActive, ++active);
        active--;
        done++;
      },
      { concurrency: 6, prefetch: 4 },
    );
    await waitFor(() => done === JOBS, { what: `${JOBS} jobs`, timeoutMs: 20_000 });
    const room = 6 + w.prefetch;
    expect(calls.maxInFlight).toBe(2);
    // The first call (no backlog known yet) asks for the whole room, the next ones for half —
    // until the queue runs dry (a short answer: no backlog), when one call asks for it all.
    expect(calls.counts[0]).toBe(room);
    expect(calls.counts.filter((c) => c === room / 2).length).toBeGreaterThan(JOBS / room);
    expect(Math.max(...calls.counts)).toBe(room);
    expect(calls.maxRoom).toBeLessThanOrEqual(room);
    expect(calls.leased).toBe(JOBS);
    expect(maxActive).toBeLessThanOrEqual(6);
    await waitFor(async () => (await q.counts()).leased === 0, { what: 'the last completes' });
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0 });
  });

  it('close() while two lease calls are in flight gives back the jobs of both, in order', async () => {
    const q = fx.queue<number>();
    const JOBS = 40;
    await q.addBulk(Array.from({ length: JOBS }, (_, i) => ({ data: i })));
    const answers = deferred();
    // The first call (the whole room: 6 jobs) is answered; the next two (3 each) are held back.
    const calls = watchCalls(q, (n) => (n > 0 ? answers.promise : undefined));
    const started: number[] = [];
    const w = worker(q, (job) => void started.push(job.data), { concurrency: 3, prefetch: 3 });
    await waitFor(async () => calls.counts.length === 3 && (await q.counts()).leased === 6, {
      what: 'two lease calls answered by Redis (3 jobs each), their answers held back',
    });
    expect(calls.maxInFlight).toBe(2);
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    const closed = w.close();
    answers.resolve();
    await closed;
    expect(started).toEqual([0, 1, 2, 3, 4, 5]);
    expect(calls.leased).toBe(12);
    expect(await q.counts()).toMatchObject({ pending: JOBS - 6, leased: 0 });
    // Back at the front, in their order.
    const again = await q.lease({ count: JOBS });
    expect(again.map((l) => l.data)).toEqual(Array.from({ length: JOBS - 6 }, (_, i) => i + 6));
  });
});
