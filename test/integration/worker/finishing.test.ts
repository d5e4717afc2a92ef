/**
 * A finished handler is not run again because its outcome was not answered yet when the
 * connection dropped (guarantee 11, issue 24 item 6): after the reconnect the worker sends the
 * complete again before it reconciles, and counts the run as its own meanwhile — the job is
 * never given back as if it had not run.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { QueueEvents, type QueueEvent } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { startRedis } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';
import { recordEvents, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

describe('a finished run across a dropped connection', () => {
  it('its complete is sent again before the reconcile, which does not give the job back', async () => {
    // A private Redis: CLIENT KILL would cut the other test files' connections.
    const redis = await startRedis();
    const client = new Redis(redis.url);
    const admin = new Redis(redis.url);
    try {
      const q = fx.queue<string>({ leaseMs: 120_000 }, client);
      const log = new QueueEvents(admin, q.name, { prefix: q.options.prefix, from: '0' });
      const released: QueueEvent[] = [];
      const completed: string[] = [];
      log.on('released', (e) => released.push(e));
      log.on('completed', (e) => completed.push(e.id));
      let runs = 0;
      let closed = false;
      client.on('close', () => (closed = true));
      const w = worker(q, async (job) => {
        runs += 1;
        if (job.data !== 'finished') return job.data;
        // Return just as the connection is back: the worker reconciles in its next turn, with
        // this complete not sent yet.
        await waitFor(() => closed, { what: 'the connection dropped' });
        await new Promise((resolve) => client.once('ready', resolve));
        return job.data;
      });
      const events = recordEvents(w);
      const { id } = await q.add('finished');
      await w.start();
      await waitFor(() => runs === 1, { what: 'the job to run' });
      await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await waitFor(() => events.some(([name]) => name === 'completed'), {
        what: 'the completed event',
        timeoutMs: 10_000,
      });
      // Completed once, and kept (keepCompleted): not pending or leased again.
      expect(await q.getJob(id)).toMatchObject({ state: 'completed', result: 'finished' });
      // Read the log up to a later job's completion: the job was never given back.
      const marker = await q.add('marker');
      await waitFor(() => completed.includes(marker.id), { what: `marker ${marker.id} logged` });
      expect(completed).toEqual([id, marker.id]);
      expect(released.map((e) => e.id)).toEqual([]);
      // The log's reader can see the marker's completion before the worker reads its reply.
      await waitFor(() => events.length >= 2, { what: "the worker's event of the marker" });
      expect(events.map(([name]) => name)).toEqual(['completed', 'completed']);
      expect(runs).toBe(2);
      await Promise.all([w.close({ timeoutMs: 1_000 }), log.close()]);
    } finally {
      client.disconnect();
      admin.disconnect();
      await redis.stop();
    }
  }, 30_000);
});
