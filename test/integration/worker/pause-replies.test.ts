/**
 * Lease replies read after the worker learnt of a queue-wide pause: their jobs go back to the
 * front of the queue unstarted, together and in their order — as under `Worker.pause()` — not a
 * reply at a time, where two replies in flight put the second's jobs before the first's. (The
 * replies are held by pausing the reads of the worker's main connection: internals.)
 */
import type { Socket } from 'node:net';
import { afterAll, describe, expect, it } from '@jest/globals';
import { WorkQueue } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { deferred, workersClosedAfterEach } from '../../support/worker.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

interface Internals {
  ctx: { queuePause: { paused: boolean }; queue: { client: { stream: Socket } } };
}

describe('lease replies read after a queue-wide pause', () => {
  it('give their jobs back together, in their order: they run in it after the resume', async () => {
    const prefix = uniqueName('t');
    const q = fx.queue<string>({ prefix });
    const producer = new WorkQueue<string>(fx.client(), q.name, { logger: false, prefix });
    const gates = [deferred(), deferred()];
    const started: string[] = [];
    const w = worker(
      q,
      async (job) => {
        started.push(job.data);
        if (job.data.startsWith('busy')) await gates[Number(job.data.slice(4))]!.promise;
      },
      { concurrency: 2, prefetch: 0 },
    );
    const { ctx } = w as unknown as Internals;
    await producer.add('busy0');
    await producer.add('busy1');
    await w.start();
    await waitFor(() => started.length === 2, { what: 'both slots busy' });
    const ids: string[] = [];
    for (const data of ['j1', 'j2', 'j3', 'j4']) ids.push((await producer.add(data)).id);
    const main = ctx.queue.client.stream;
    main.pause();
    try {
      // Each finished job's call completes it and leases one job: two calls in flight, their
      // replies (j1, then j2) held.
      gates[0]!.resolve();
      await waitFor(async () => (await producer.getJob(ids[0]!))?.state === 'leased', {
        what: 'the first call to lease j1',
      });
      gates[1]!.resolve();
      await waitFor(async () => (await producer.getJob(ids[1]!))?.state === 'leased', {
        what: 'the second call to lease j2',
      });
      await producer.pause();
      await waitFor(() => ctx.queuePause.paused, { what: 'the worker to hear of the pause' });
    } finally {
      main.resume();
    }
    await waitFor(async () => (await producer.counts()).pending === 4, {
      what: 'j1 and j2 given back',
    });
    const pending = await producer.getJobs('pending');
    expect(pending.map((j) => j.data)).toEqual(['j1', 'j2', 'j3', 'j4']);
    expect(started).toEqual(['busy0', 'busy1']);
    await producer.resume();
    await waitFor(() => started.length === 6, { what: 'the four jobs to run' });
    expect(started.slice(2)).toEqual(['j1', 'j2', 'j3', 'j4']);
  });
});
