/**
 * A wake-up read while a lease call sent before it is still unanswered: that call ran in Redis
 * before the job was added and comes back empty. The worker must lease again, not start a new
 * idle wait — the wake-up is spent, and the job would wait for the idle timeout (seen on a
 * Cluster as a flow's child waiting 5 s). The order is forced by holding the reads of the
 * worker's main connection (internals); the job comes by a wake-up alone (promote), not a
 * hand-off.
 */
import type { Socket } from 'node:net';
import { afterAll, describe, expect, it } from '@jest/globals';
import { WorkQueue } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { workersClosedAfterEach } from '../../support/worker.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

interface Internals {
  ctx: {
    id: string;
    idle: { conn?: { stream: Socket }; waiting: boolean };
    loop: { flush(): Promise<void> };
    queue: { client: { stream: Socket } };
  };
}

/** The connection on `port` is blocked in a BLMOVE (CLIENT LIST). */
async function blockedIn(port: number | undefined): Promise<boolean> {
  const clients = (await fx.client().client('LIST')) as string;
  return clients
    .split('\n')
    .some((c) => c.includes(`:${port} `) && /flags=\S*b.* cmd=blmove/.test(c));
}

describe('a wake-up read while an older lease call is unanswered', () => {
  it('leases again when that call comes back empty: the job runs at once', async () => {
    const prefix = uniqueName('t');
    const q = fx.queue<string>({ prefix });
    const producer = new WorkQueue<string>(fx.client(), q.name, { logger: false, prefix });
    const { id } = await producer.add('woken', { delayMs: 3_600_000 });
    const ran: string[] = [];
    const w = worker(q, (job) => void ran.push(job.id), {
      concurrency: 1,
      prefetch: 0,
      idleTimeoutMs: 60_000,
    });
    const { ctx } = w as unknown as Internals;
    await w.start();
    await waitFor(() => blockedIn(ctx.idle.conn?.stream.localPort), {
      what: 'the worker blocked in its idle wait',
    });
    const admin = fx.client();
    const parkedKey = q.keys.key('parked');
    const parkedUntil = async () => Number(await admin.zscore(parkedKey, ctx.id));
    const before = await parkedUntil();
    // Redis' clock past the ms of that park (parked until then + idle timeout + 1 s), so that
    // the next park's time differs.
    const redisMs = async () => {
      const [s, us] = await admin.time();
      return Number(s) * 1000 + Math.floor(Number(us) / 1000);
    };
    await waitFor(async () => (await redisMs()) > before - 61_000, {
      what: "Redis' clock to move on",
    });
    const main = ctx.queue.client.stream;
    main.pause();
    try {
      // A lease call asking for the worker's one slot: it runs (nothing pending; parked again),
      // its reply held.
      void ctx.loop.flush();
      await waitFor(async () => (await parkedUntil()) > before, {
        what: 'the lease call to run in Redis',
      });
      // The job comes now, by a wake-up, read by the idle wait while that reply is held.
      expect(await producer.promote(id)).toBe(true);
      await waitFor(() => !ctx.idle.waiting, { what: 'the idle wait to read the wake-up' });
      // The flush the wait's end scheduled (setImmediate, queued before this one) has run: it
      // leased nothing, every free slot being asked for by the call in flight.
      await new Promise((r) => setImmediate(r));
    } finally {
      main.resume();
    }
    await waitFor(() => ran.includes(id), { what: 'the job to run' });
  });
});
