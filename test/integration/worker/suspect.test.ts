/**
 * A suspect job (it ran beside others when its worker died) runs alone: a worker leases it only
 * when Redis says the worker holds nothing. A worker that holds nothing itself while Redis says
 * it holds a lease (one whose reply it never got) must not wait for a job to end that it does
 * not have: it reconciles, then takes the suspect.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

describe('a suspect job at the head of the queue', () => {
  it('is taken by a worker that holds nothing, although Redis said it held a lease', async () => {
    const q = fx.queue<string>({ leaseMs: 120_000 });
    const ran: string[] = [];
    const w = worker(q, (job) => void ran.push(job.data), { idleTimeoutMs: 60_000 });
    await w.start();
    w.pause();
    await waitFor(async () => (await fx.client().zcard(`${q.keys.base}pk`)) === 0, {
      what: 'the worker unparked',
    });
    // A lease of this worker that it never heard of, as when a lease reply died with the
    // connection (the worker has not noticed: nothing dropped).
    const { id: phantom } = await q.add('phantom');
    const [orphan] = await q.lease({ workerId: w.workerId });
    expect(orphan?.id).toBe(phantom);
    // A suspect: its lease lapsed and clean() took it back (it runs alone next).
    const { id: suspect } = await q.add('suspect');
    const [lapsing] = await q.lease({ leaseMs: 1 });
    expect(lapsing?.id).toBe(suspect);
    await waitFor(async () => (await q.clean()).reclaimed === 1, { what: 'the lease reclaimed' });
    w.resume();
    await waitFor(() => ran.includes('suspect') && ran.includes('phantom'), {
      what: 'both jobs to run',
      timeoutMs: 10_000,
    });
    expect(ran.sort()).toEqual(['phantom', 'suspect']);
  });
});
