/**
 * A lease call answered "paused" for a pause the worker already knows was resumed (its main
 * connection slower than its notice connection): the reply changes nothing of the pause, and
 * the flush that 'resumed' scheduled ran while that call was still in flight (asking for the
 * whole room, it sent nothing). The worker must still lease — nothing else would call: no run
 * left to end, no wait (with the default prefetch, a busy worker does not wait either).
 */
import { afterAll, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { WorkQueue, type Worker, type WorkerOptions } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { deferred, idleWaitBlocked, workersClosedAfterEach } from '../../support/worker.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();
const admin = fx.client();

interface Internals {
  ctx: {
    queuePause: { onEvent(message: string): boolean; paused: boolean };
    idle: { waiting: boolean };
  };
}
const internals = (w: Worker<string, unknown>) => (w as unknown as Internals).ctx;
const turn = () => new Promise((r) => setImmediate(r));

it.each([
  ['prefetch 0', { prefetch: 0 }],
  ['default prefetch', {}],
] as const)(
  "a lease answered 'paused' after the worker heard the resume: it still leases (%s)",
  async (_, opts: WorkerOptions) => {
    const prefix = uniqueName('t');
    const client: Redis = fx.client();
    const q = fx.queue<string>({ prefix }, client);
    const producer = new WorkQueue<string>(fx.client(), q.name, { logger: false, prefix });
    const gate = deferred();
    const started: string[] = [];
    const w = worker(
      q,
      async (job) => {
        started.push(job.data);
        if (job.data === 'L') await gate.promise;
      },
      { concurrency: 1, idleTimeoutMs: 60_000, ...opts },
    );
    await w.start();
    await producer.add('L');
    await waitFor(() => started.includes('L') && !internals(w).idle.waiting, {
      what: 'L running, the worker not waiting',
    });
    // The pause and resume notices reach the worker only when we say.
    const qp = internals(w).queuePause;
    const onEvent = qp.onEvent.bind(qp);
    const notices: string[] = [];
    let hold = true;
    qp.onEvent = (m: string) => {
      if (hold && /^[pr]:\d+$/.test(m)) return notices.push(m) > 0;
      return onEvent(m);
    };
    await producer.pause();
    const stream = (client as unknown as { stream: import('node:net').Socket }).stream;
    stream.pause(); // the worker's replies wait unread
    try {
      gate.resolve(); // L ends: its complete + lease call runs in Redis, answered 'paused'
      await waitFor(async () => (await producer.counts()).completed === 1, {
        what: "L's complete + lease call run",
      });
      await producer.resume();
      await waitFor(() => notices.length === 2, { what: 'the pause and resume notices' });
      hold = false;
      for (const m of notices) onEvent(m); // paused, then resumed: a flush is scheduled…
      await turn(); // …and runs, the call still in flight
      expect(qp.paused).toBe(false);
    } finally {
      stream.resume();
    }
    await waitFor(() => idleWaitBlocked(admin, w), { what: 'the worker waiting for work' });
    await producer.add('J');
    await waitFor(() => started.includes('J'), { timeoutMs: 3_000, what: 'J to start' });
  },
  20_000,
);
