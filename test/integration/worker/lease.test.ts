/**
 * Worker runtime: lease renewal and lease loss. A long job keeps its lease (renewed in the
 * background); a lost lease (cancelled, reclaimed and taken by another holder, completed by a
 * stale holder) aborts the job's signal, and the handler's late return changes nothing.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { WorkQueueError } from '../../../lib/index.js';
import type { Job, WorkQueue } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { gatedHandler, recordEvents, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

/**
 * Make a leased job's lease expire now and reclaim it with `clean()`. The worker may renew the
 * lease between the two steps; then nothing was reclaimed and we try again.
 */
async function expireAndReclaim(admin: Redis, q: WorkQueue, seq: string): Promise<void> {
  await waitFor(
    async () => {
      await admin.zadd(q.keys.leased, 'XX', 1, seq);
      return (await q.clean()).reclaimed === 1;
    },
    { what: `lease of ${seq} reclaimed` },
  );
}

describe('Worker lease renewal', () => {
  it('a job running 3x its leaseMs completes normally; clean() meanwhile reclaims nothing', async () => {
    const q = fx.queue<string>();
    let signal: AbortSignal | undefined;
    let cleans = 0;
    const w = worker(
      q,
      async (job) => {
        signal = job.signal;
        // Runs over 3x its leaseMs, and long enough for clean() to look at it 10 times.
        const started = Date.now();
        await waitFor(() => cleans >= 10 && Date.now() - started >= 4_600, {
          what: 'ten clean() rounds during the run',
          timeoutMs: 20_000,
        });
        return 'done';
      },
      // (Renewed every leaseMs / 3: 1 500 leaves a stall of ~1 s on a loaded machine room;
      // this process's own clean() loop would take back a lease a stall let lapse.)
      { leaseMs: 1_500 },
    );
    const events = recordEvents(w);
    const { id } = await q.add('long');
    await waitFor(() => signal, { what: 'job started' });
    const deadlines = new Set<number>();
    let reclaimed = 0;
    while (!events.length) {
      const r = await q.clean();
      cleans++;
      reclaimed += r.reclaimed + r.reclaimedFromWorkers + r.deadLettered;
      const info = await q.getJob(id);
      if (info?.state === 'leased') deadlines.add(info.at!);
      await sleep(50);
    }
    await waitFor(() => events.some(([e]) => e === 'completed'), { what: 'completed' });
    expect(cleans).toBeGreaterThanOrEqual(10);
    expect(reclaimed).toBe(0);
    // Renewed in the background (every leaseMs / 3): the deadline moved several times.
    expect(deadlines.size).toBeGreaterThanOrEqual(3);
    expect(signal!.aborted).toBe(false);
    expect(events.map(([e]) => e)).toEqual(['completed']);
    expect(events[0]![2]).toBe('done');
    expect(await q.getJob(id)).toMatchObject({ state: 'completed', attemptsMade: 1 });
  });
});

describe('Worker lease loss', () => {
  it('cancel(id) while running aborts the signal; the late return changes nothing', async () => {
    const q = fx.queue<string>();
    const { runs, handler } = gatedHandler<string>();
    const w = worker(q, handler, { leaseMs: 5_000 });
    const events = recordEvents(w);
    const { id } = await q.add('victim');
    await waitFor(() => runs.length === 1, { what: 'job started' });
    const { job, gate } = runs[0]!;

    expect(await q.cancel(id)).toBe(true);
    await waitFor(() => job.signal.aborted, { what: 'signal aborted' });
    expect(job.signal.reason).toBeInstanceOf(WorkQueueError);
    expect(job.signal.reason).toMatchObject({ code: 'LEASE_LOST', message: 'job cancelled' });
    expect(events).toEqual([['leaseLost', job, 'job cancelled']]);

    gate.resolve('late result');
    // The worker goes on: a later job completes, so the late return has been dealt with.
    const next = await q.add('next');
    await waitFor(() => runs.length === 2, { what: 'next job started' });
    runs[1]!.gate.resolve('next result');
    await waitFor(() => events.some(([e]) => e === 'completed'), { what: 'next completed' });
    expect(events.map(([e, j]) => [e, (j as Job).id])).toEqual([
      ['leaseLost', id],
      ['completed', next.id],
    ]);
    expect(await q.getJob(id)).toBeNull();
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0, completed: 1 });
  });

  it('lease reclaimed and taken by another holder: signal aborts, the new holder keeps the job', async () => {
    const q = fx.queue<string>();
    const admin = fx.client();
    const { runs, handler } = gatedHandler<string>();
    // No prefetch: with a free prefetch slot the worker itself could take the reclaimed job.
    const w = worker(q, handler, { leaseMs: 1_500, prefetch: 0 });
    const events = recordEvents(w);
    const { id } = await q.add('stolen');
    await waitFor(() => runs.length === 1, { what: 'job started' });
    const { job, gate } = runs[0]!;

    await expireAndReclaim(admin, q, id);
    // Another holder takes it (the worker's only slot is busy, so it is not the worker).
    const [other] = await q.lease({ count: 1, leaseMs: 30_000 });
    expect(other).toMatchObject({ id, attempt: 1, leaseExpiries: 0 }); // not a solo run: not counted

    // The worker learns at its next renewal (every leaseMs / 3).
    await waitFor(() => job.signal.aborted, { what: 'signal aborted', timeoutMs: 3_000 });
    expect(job.signal.reason).toMatchObject({
      code: 'LEASE_LOST',
      message: 'lease lost (expired and reclaimed)',
    });
    expect(events).toEqual([['leaseLost', job, 'lease lost (expired and reclaimed)']]);

    gate.resolve('late result');
    const next = await q.add('next');
    await waitFor(() => runs.length === 2, { what: 'next job started' });
    runs[1]!.gate.resolve('ok');
    await waitFor(() => events.some(([e]) => e === 'completed'), { what: 'next completed' });
    expect(events.filter(([e]) => e === 'completed').map(([, j]) => (j as Job).id)).toEqual([
      next.id,
    ]);
    // The new holder still holds it, untouched.
    expect(await q.getJob(id)).toMatchObject({ state: 'leased', leaseExpiries: 0 });
    expect(await q.extend(other!, 30_000)).toEqual([true]);
    expect(await q.complete(other!)).toBe(true);
  });

  it('a stale holder completing the job aborts the worker that holds it now', async () => {
    // A long heartbeat timeout: a stall of the event loop (a loaded machine) longer than half of
    // it makes the worker verify its leases by a renewal (lease-renewer.ts), which would learn
    // the loss before the notice, the path tested here.
    const q = fx.queue<string>({ heartbeatTimeoutMs: 60_000 });
    const admin = fx.client();
    const { id } = await q.add('contested');
    // A first holder leases it, goes silent, and its lease is reclaimed.
    const [stale] = await q.lease({ count: 1, leaseMs: 30_000 });
    await expireAndReclaim(admin, q, id);

    const { runs, handler } = gatedHandler<string>();
    // A long lease: no renewal (every third of it) comes before the notice, the path tested here.
    const w = worker(q, handler, { leaseMs: 60_000 });
    const events = recordEvents(w);
    await waitFor(() => runs.length === 1, { what: 'worker took the job' });
    const { job, gate } = runs[0]!;

    // The stale holder finishes after all: its complete wins (the work is saved).
    expect(await q.complete(stale!)).toBe(true);
    await waitFor(() => job.signal.aborted, { what: 'signal aborted' });
    expect(job.signal.reason).toMatchObject({
      code: 'LEASE_LOST',
      message: 'job completed by another lease holder',
    });
    gate.resolve('late');
    const next = await q.add('next');
    await waitFor(() => runs.length === 2, { what: 'next job started' });
    runs[1]!.gate.resolve('ok');
    await waitFor(() => events.some(([e]) => e === 'completed'), { what: 'next completed' });
    expect(events.map(([e, j]) => [e, (j as Job).id])).toEqual([
      ['leaseLost', id],
      ['completed', next.id],
    ]);
    expect(await q.getJob(id)).toMatchObject({ state: 'completed', attemptsMade: 1 });
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0, completed: 2 });
  });

  it('a job reclaimed and leased again by the same worker: the stale run aborts, the new one completes once', async () => {
    const q = fx.queue<string>();
    const admin = fx.client();
    const { runs, handler } = gatedHandler<string>();
    const w = worker(q, handler, { concurrency: 2, leaseMs: 1_500 });
    const events = recordEvents(w);
    const { id } = await q.add('twice');
    await waitFor(() => runs.length === 1, { what: 'first run started' });

    // Reclaimed to the front; the worker's free slot (it is idle on one) takes it again.
    await expireAndReclaim(admin, q, id);
    await waitFor(() => runs.length === 2, { what: 'second run started' });
    const [first, second] = runs;
    expect(second!.job.id).toBe(id);
    expect(second!.job.signal).not.toBe(first!.job.signal);

    await waitFor(() => first!.job.signal.aborted, {
      what: 'stale run aborted',
      timeoutMs: 3_000,
    });
    expect(second!.job.signal.aborted).toBe(false);
    expect(w.activeCount).toBe(1);

    // The new run completes; the stale run's late return changes nothing.
    second!.gate.resolve('second');
    await waitFor(() => events.some(([e]) => e === 'completed'), { what: 'completed' });
    first!.gate.resolve('first');
    const next = await q.add('next');
    await waitFor(() => runs.length === 3, { what: 'next job started' });
    runs[2]!.gate.resolve('ok');
    await waitFor(() => events.filter(([e]) => e === 'completed').length === 2, {
      what: 'next completed',
    });
    expect(events.map(([e, j, r]) => [e, (j as Job).id, r])).toEqual([
      ['leaseLost', id, 'lease lost (expired and reclaimed)'],
      ['completed', id, 'second'],
      ['completed', next.id, 'ok'],
    ]);
    expect(second!.job.signal.aborted).toBe(false);
    expect(w.activeCount).toBe(0);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0 });
  });
});
