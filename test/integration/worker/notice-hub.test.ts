/**
 * The Workers of one process share one notice connection per client options
 * (lib/redis/notice-hub.ts): Workers of two queues, on clients made alike, open one pub/sub
 * connection between them, not one each; each hears its own queue's notices only; one that
 * closes leaves the others subscribed (its channel stays subscribed, unheard: no UNSUBSCRIBE,
 * which the documented ACL does not grant); the last one closes the connection; a dropped connection
 * brings every Worker on it back. Clients with other options get their own.
 */
import { describe, expect, it } from '@jest/globals';
import { Redis, type RedisOptions } from 'ioredis';
import { WorkQueue } from '../../../lib/index.js';
import type { Job } from '../../../lib/index.js';
import { joinNotices, type NoticeListener } from '../../../lib/redis/notice-hub.js';
import { uniqueName } from '../../support/keys.js';
import { privateRedis } from '../../support/private-redis.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

// A private Redis: the pub/sub connections counted are this file's.
const redis = privateRedis();
const worker = workersClosedAfterEach(() => undefined);

function queue(options: RedisOptions = {}): WorkQueue<string> {
  return new WorkQueue<string>(redis.client(options), uniqueName(), { logger: false });
}

/**
 * The ids of the Workers' pub/sub connections (not those of the queue objects that cancel: their
 * clients are named 'producer', and so is their subscriber for acknowledgements).
 */
async function noticeConnections(): Promise<string[]> {
  const list = String(await redis.admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
  return list
    .split('\n')
    .filter((l) => l.trim() !== '' && !l.includes(' name=producer '))
    .map((l) => /\bid=(\d+)/.exec(l)![1]!);
}
const pubsubConnections = async () => (await noticeConnections()).length;

/** The queue `q` seen by a producer of its own (it cancels). */
function producer(q: WorkQueue<string>): WorkQueue<string> {
  const c = redis.client({ connectionName: 'producer' });
  return new WorkQueue<string>(c, q.name, { logger: false });
}

const subscribers = async (q: WorkQueue<string>) =>
  Number(((await redis.admin.pubsub('NUMSUB', q.keys.noticeChannel)) as [string, number])[1]);

/** A started worker whose jobs run until cancelled (their signal aborts), recorded in `runs`. */
async function holding(q: WorkQueue<string>, runs: Job<string>[]) {
  const w = worker(
    q,
    (job) =>
      new Promise<string>((resolve) => {
        runs.push(job);
        job.signal.addEventListener('abort', () => resolve('aborted'));
      }),
    { concurrency: 2, idleTimeoutMs: 30_000 },
  );
  await w.start();
  return w;
}

/** Add a job to `q`, wait until `runs` holds it, cancel it, wait for its signal. */
async function cancelReaches(q: WorkQueue<string>, runs: Job<string>[], data: string) {
  const { id } = await q.add(data);
  await waitFor(() => runs.some((r) => r.id === id), { what: `${data} started` });
  expect(await producer(q).cancel(id)).toBe(true);
  await waitFor(() => runs.find((r) => r.id === id)!.signal.aborted, {
    what: `the cancel of ${data} reached its worker`,
  });
}

describe('notice connections shared by the Workers of a process', () => {
  it('Workers of two queues on clients made alike: one connection, each hears its own queue', async () => {
    const a = queue();
    const b = queue();
    const a2 = new WorkQueue<string>(queue().client, a.name, { logger: false });
    const runsA: Job<string>[] = [];
    const runsB: Job<string>[] = [];
    await holding(a, runsA);
    await holding(a2, runsA);
    const wb = await holding(b, runsB);
    await waitFor(async () => (await subscribers(a)) === 1 && (await subscribers(b)) === 1, {
      what: 'both channels subscribed',
    });
    expect(await pubsubConnections()).toBe(1);

    // A cancel on B aborts B's job only.
    const { id: heldA } = await a.add('held on A');
    await waitFor(() => runsA.some((r) => r.id === heldA), { what: 'A job started' });
    await cancelReaches(b, runsB, 'b1');
    expect(runsA.find((r) => r.id === heldA)!.signal.aborted).toBe(false);

    // B's worker leaves: A's stay subscribed and keep hearing cancels.
    await wb.close();
    expect(await subscribers(a)).toBe(1);
    expect(await pubsubConnections()).toBe(1);
    expect(await producer(a).cancel(heldA)).toBe(true);
    await waitFor(() => runsA.find((r) => r.id === heldA)!.signal.aborted, {
      what: 'the cancel of the A job reached its worker',
    });
  });

  it('the last Worker to close closes the connection', async () => {
    const a = queue();
    const b = queue();
    const wa = await holding(a, []);
    const wb = await holding(b, []);
    await waitFor(async () => (await subscribers(a)) === 1 && (await subscribers(b)) === 1, {
      what: 'both channels subscribed',
    });
    expect(await pubsubConnections()).toBe(1);
    await wa.close();
    expect(await pubsubConnections()).toBe(1);
    await wb.close();
    await waitFor(async () => (await pubsubConnections()) === 0, { what: 'connection closed' });
    // A Worker started afterwards opens a new one.
    const runs: Job<string>[] = [];
    await holding(a, runs);
    await waitFor(async () => (await subscribers(a)) === 1, { what: 'subscribed again' });
    await cancelReaches(a, runs, 'after');
  });

  it('CLIENT KILL TYPE pubsub: every Worker on the connection subscribes again', async () => {
    const a = queue();
    const b = queue();
    const runsA: Job<string>[] = [];
    const runsB: Job<string>[] = [];
    await holding(a, runsA);
    await holding(b, runsB);
    await waitFor(async () => (await subscribers(a)) === 1 && (await subscribers(b)) === 1, {
      what: 'both channels subscribed',
    });
    const ids = await noticeConnections();
    expect(ids).toHaveLength(1);
    expect(await redis.admin.call('CLIENT', 'KILL', 'ID', ids[0]!)).toBe(1);
    await waitFor(async () => (await subscribers(a)) === 1 && (await subscribers(b)) === 1, {
      what: 'both channels subscribed again',
    });
    expect(await pubsubConnections()).toBe(1);
    await cancelReaches(a, runsA, 'a after the kill');
    await cancelReaches(b, runsB, 'b after the kill');
  });

  it('clients with other options (another connection name) get a connection of their own', async () => {
    const a = queue();
    const b = queue({ connectionName: 'other' });
    const runsB: Job<string>[] = [];
    await holding(a, []);
    await holding(b, runsB);
    await waitFor(async () => (await subscribers(a)) === 1 && (await subscribers(b)) === 1, {
      what: 'both channels subscribed',
    });
    expect(await pubsubConnections()).toBe(2);
    await cancelReaches(b, runsB, 'b on its own connection');
  });

  it('a client of another class (or another function in its options) gets its own', async () => {
    class Gated extends Redis {}
    const a = queue();
    const c = redis.client({}, Gated);
    const b = new WorkQueue<string>(c, uniqueName(), { logger: false });
    const d = queue({ retryStrategy: () => 50 });
    await holding(a, []);
    await holding(b, []);
    await holding(d, []);
    await waitFor(
      async () => (await subscribers(a)) + (await subscribers(b)) + (await subscribers(d)) === 3,
      { what: 'the three channels subscribed' },
    );
    expect(await pubsubConnections()).toBe(3);
  });
});

describe('joinNotices', () => {
  const listener = (heard: string[]): NoticeListener => ({
    message: (m) => heard.push(m),
    dropped: () => undefined,
    ready: () => undefined,
    ended: () => undefined,
  });
  const numsub = async (channel: string) =>
    Number(((await redis.admin.pubsub('NUMSUB', channel)) as [string, number])[1]);

  it('one that leaves (while the connection still connects) hears nothing more, and cannot subscribe', async () => {
    const [c1, c2] = [redis.client(), redis.client()];
    const [ch1, ch2] = [uniqueName(), uniqueName()];
    const heard: string[] = [];
    const m1 = joinNotices(c1, ch1, listener(heard));
    const m2 = joinNotices(c2, ch2, listener(heard));
    expect(m2.connection).toBe(m1.connection);
    const first = m1.subscribe();
    // Its SUBSCRIBE waits for the connection, and goes: the channel stays subscribed, unheard.
    const late = m2.subscribe();
    await m2.leave();
    await Promise.all([first, late]);
    expect(await numsub(ch1)).toBe(1);
    await expect(m2.subscribe()).rejects.toThrow(/left/);
    await redis.admin.publish(ch2, 'not heard');
    await redis.admin.publish(ch1, 'heard');
    await waitFor(() => heard.length > 0, { what: 'the message on ch1' });
    expect(heard).toEqual(['heard']);
    await m1.leave();
    await waitFor(() => m1.connection.status === 'end', { what: 'the connection closed' });
  });
});
