/**
 * A Worker's complete whose reply was lost (the connection dropped after Redis ran it; ioredis
 * sends it again after the reconnect, or the worker does before it reconciles): the job completes
 * once, and the worker emits `completed` for it — the re-send of a kept job this worker completed
 * answers true (DESIGN 11: idempotent). Without kept jobs nothing tells the re-send from a stale
 * complete: `leaseLost`, as documented (docs/reliability-and-security.md).
 */
import { afterAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { WorkQueue, type WorkQueueOptions } from '../../../lib/index.js';
import { deleteKeys, uniqueName } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { replyDroppingProxy } from '../../support/reply-dropping-proxy.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

async function completeWithReplyLost(options: WorkQueueOptions) {
  const marker = uniqueName('marker').toLowerCase();
  const proxy = await replyDroppingProxy(marker);
  const client = new Redis(proxy.url); // default options: re-sends unanswered commands
  client.on('error', () => undefined);
  const prefix = uniqueName('t');
  try {
    const q = new WorkQueue<string, { marker: string }>(client, uniqueName(), {
      logger: false,
      prefix,
      ...options,
    });
    const check = new WorkQueue(fx.client(), q.name, { logger: false, prefix });
    const events: string[] = [];
    const w = worker(q, async () => ({ marker }));
    w.on('completed', (job) => events.push(`completed ${job.id}`));
    w.on('leaseLost', (job) => events.push(`leaseLost ${job.id}`));
    w.on('error', () => undefined); // the dropped connection
    await w.start();
    proxy.arm(); // the complete carries the result, and so the marker
    const { id } = await q.add('x');
    await waitFor(() => events.length > 0, { what: 'the outcome of the run' });
    await w.close();
    expect(proxy.dropped).toBe(1);
    const job = await check.getJob(id);
    const completed = (await check.getMetrics('completed')).total;
    return { id, events, job, completed };
  } finally {
    client.disconnect();
    await proxy.close();
    await deleteKeys(fx.client(), `${prefix}:*`);
  }
}

it('a kept job: the re-sent complete answers true, the worker emits completed, the job completes once', async () => {
  const { id, events, job, completed } = await completeWithReplyLost({});
  expect(events).toEqual([`completed ${id}`]);
  expect(job).toMatchObject({ state: 'completed', attemptsMade: 1 });
  expect(completed).toBe(1);
});

it('keepCompleted: false — the re-send cannot be told from a stale complete: leaseLost, the job completed once', async () => {
  const { id, events, job, completed } = await completeWithReplyLost({
    keepCompleted: false,
    storeResults: { ttlMs: 60_000 },
  });
  expect(events).toEqual([`leaseLost ${id}`]);
  expect(job).toMatchObject({ state: 'completed' }); // by its stored result
  expect(completed).toBe(1);
});

it('complete() by hand answers true once, also for a lease of a registered worker', async () => {
  const q = fx.queue<string>();
  const workerId = await q.registerWorker();
  await q.add('x');
  const [lease] = await q.lease({ count: 1, workerId });
  expect(await q.complete(lease!)).toBe(true);
  expect(await q.complete(lease!)).toBe(false);
  expect((await q.completeAndLease([{ lease: lease! }])).completed).toEqual([false]);
  expect((await q.getMetrics('completed')).total).toBe(1);
});

it('a stale complete of a job its worker leased again: that one and its re-send answer true, the later lease’s complete false', async () => {
  // The fault suite's CLIENT PAUSE: a worker's complete waits while its lease expires, clean()
  // takes the job back and the same worker leases it again; the stale complete then completes it
  // (a stale holder saves the work). The later lease's complete is no re-send of that one: it
  // must not answer true (the worker would emit `completed` twice for one job).
  const q = fx.queue<string>();
  const workerId = await q.registerWorker();
  const { id } = await q.add('x');
  const [first] = await q.lease({ count: 1, workerId, leaseMs: 1 });
  await waitFor(async () => (await q.clean()).reclaimed === 1, {
    what: 'the lapsed lease taken back',
  });
  const [second] = await q.lease({ count: 1, workerId });
  expect(second).toMatchObject({ id, seq: first!.seq });
  expect(second!.token).not.toBe(first!.token);
  const own = { ownResends: true };
  expect((await q.completeAndLease([{ lease: first! }], undefined, own)).completed).toEqual([true]);
  expect((await q.completeAndLease([{ lease: first! }], undefined, own)).completed).toEqual([true]);
  expect((await q.completeAndLease([{ lease: second! }], undefined, own)).completed).toEqual([
    false,
  ]);
  expect(await q.getJob(id)).toMatchObject({
    state: 'completed',
    processedBy: workerId,
    attemptsMade: 1,
  });
  expect((await q.getMetrics('completed')).total).toBe(1);
});

it("a registration re-sent after its reply was lost answers the first one's id: one worker, none left", async () => {
  const marker = uniqueName('reg').toLowerCase();
  const proxy = await replyDroppingProxy(marker);
  const client = new Redis(proxy.url); // default options: re-sends unanswered commands
  client.on('error', () => undefined);
  const prefix = uniqueName('t');
  try {
    const q = new WorkQueue(client, uniqueName(), { logger: false, prefix });
    const check = new WorkQueue(fx.client(), q.name, { logger: false, prefix });
    proxy.arm(); // the registration carries the worker's name
    const w = worker(q, async () => 'ok', { name: marker });
    w.on('error', () => undefined); // the dropped connection
    await w.start();
    expect(proxy.dropped).toBe(1);
    expect((await check.getWorkers()).map((x) => x.id)).toEqual([w.workerId]);
    expect((await check.counts()).workers).toBe(1);
    await w.close();
    expect(await check.getWorkers()).toEqual([]);
  } finally {
    client.disconnect();
    await proxy.close();
    await deleteKeys(fx.client(), `${prefix}:*`);
  }
});
