/**
 * A job handed off to a parked worker whose reply it reads only after it learnt that the queue
 * was paused (its blocking connection slow, its event loop busy, its process frozen): it gives the
 * job back unstarted, as it does its prefetched jobs (docs/flow-control.md), and runs it after the
 * resume. (The order is forced by holding the blocking connection's reads: internals.)
 */
import type { Socket } from 'node:net';
import { afterAll, describe, expect, it } from '@jest/globals';
import { QueueFixture } from '../../support/queue.js';
import { workersClosedAfterEach } from '../../support/worker.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

interface Internals {
  ctx: { idle: { conn?: { stream: Socket } }; queuePause: { paused: boolean } };
}

describe('a hand-off read after a queue-wide pause', () => {
  it('goes back to pending unstarted; it runs after the resume', async () => {
    const q = fx.queue<string>();
    const ran: string[] = [];
    const w = worker(q, (job) => void ran.push(job.id), { concurrency: 1, prefetch: 0 });
    const { ctx } = w as unknown as Internals;
    await w.start();
    // Parked, its idle wait blocked in Redis (a hand-off goes to it, not to the wake list).
    let blocking: Socket | undefined;
    await waitFor(
      async () => {
        blocking = ctx.idle.conn?.stream;
        const clients = (await fx.client().client('LIST')) as string;
        return clients
          .split('\n')
          .some((c) => c.includes(`:${blocking?.localPort} `) && /flags=\S*b.* cmd=blmove/.test(c));
      },
      { what: 'the worker blocked in its idle wait' },
    );
    blocking!.pause();
    try {
      const { id } = await q.add('handed off');
      expect(await q.getJob(id)).toMatchObject({ state: 'leased' });
      await q.pause();
      await waitFor(() => ctx.queuePause.paused, { what: 'the worker to hear of the pause' });
      blocking!.resume();
      await waitFor(async () => (await q.getJob(id))?.state === 'pending', {
        what: 'the hand-off given back',
      });
      expect(ran).toEqual([]);
      await q.resume();
      await waitFor(() => ran.includes(id), { what: 'the job run after the resume' });
    } finally {
      blocking!.resume();
    }
  });
});
