/**
 * The shared heartbeat thread: every Worker of every queue in a process beats from ONE thread
 * (one Redis connection per connection configuration); a closed worker's beats stop while the
 * others' go on; the thread is gone a moment after the last worker left (a worker started
 * meanwhile keeps it); and a fresh worker's first job
 * does not wait for the thread to start (the main thread bridges its beats meanwhile).
 */
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker, type WorkQueue } from '../../../lib/index.js';
import {
  heartbeatThreadsStarted,
  heartbeatThreadStats,
  holdHeartbeatThread,
} from '../../../lib/worker/heartbeat-testing.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

const HEARTBEAT_TIMEOUT_MS = 1_000; // beats every 250 ms

async function beatOf(q: WorkQueue, workerId: string): Promise<number | null> {
  const s = await fx.client().zscore(q.keys.workers, workerId);
  return s === null ? null : Number(s);
}

describe('the shared heartbeat thread', () => {
  it('20 workers on 20 queues: one thread, one connection, every beat lands; closing stops only its own', async () => {
    const admin = fx.client();
    const queues = Array.from({ length: 20 }, () =>
      fx.queue({ heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS }),
    );
    const workers = queues.map((q) => new Worker(q, () => 'ok'));
    const errors: unknown[] = [];
    for (const w of workers) w.on('error', (e) => errors.push(e));
    await Promise.all(workers.map((w) => w.start()));
    // The thread starts with the first lease call, after start() resolved.
    await waitFor(() => heartbeatThreadStats().threads === 1, { what: 'the thread started' });
    // Every client has the same configuration: one thread, one connection inside it.
    expect(heartbeatThreadStats()).toEqual({ threads: 1, workers: 20, connections: 1 });

    // Every worker's score advances (past the bridge's start-up grace: the thread beats).
    await Promise.all(
      workers.map(
        (w) => (w as unknown as { heartbeat: { firstBeat: Promise<void> } }).heartbeat.firstBeat,
      ),
    );
    const scores = async () =>
      Promise.all(
        workers.map(async (w, i) =>
          Number(await admin.zscore(queues[i]!.keys.workers, w.workerId)),
        ),
      );
    const at = await scores();
    await waitFor(async () => (await scores()).every((s, i) => s > at[i]! + 250), {
      what: 'every worker beat twice',
    });

    // Close half: they deregister, and no late beat brings them back while the others beat on.
    await Promise.all(workers.slice(0, 10).map((w) => w.close()));
    expect(heartbeatThreadStats()).toMatchObject({ threads: 1, workers: 10, connections: 1 });
    const later = await scores();
    await waitFor(
      async () => (await scores()).slice(10).every((s, i) => s > later[i + 10]! + 250),
      { what: 'the open workers beat on' },
    );
    for (let i = 0; i < 10; i++) {
      expect(await beatOf(queues[i]!, workers[i]!.workerId)).toBeNull();
    }
    for (const q of queues.slice(10)) expect((await q.counts()).workers).toBe(1);

    // The last one leaves: the thread closes its connection and ends.
    await Promise.all(workers.slice(10).map((w) => w.close()));
    await waitFor(() => heartbeatThreadStats().threads === 0, { what: 'the thread ended' });
    expect(heartbeatThreadStats()).toEqual({ threads: 0, workers: 0, connections: 0 });
    expect(errors).toEqual([]);
  });

  it('a worker started just after the last one closed beats from the same thread', async () => {
    const q = fx.queue<string>({ heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS });
    const first = new Worker(q, () => 'ok');
    await first.start();
    await waitFor(() => heartbeatThreadStats().threads === 1, { what: 'the thread started' });
    const started = heartbeatThreadsStarted();
    await first.close();
    // The thread outlives its last worker a moment, without its connection.
    expect(heartbeatThreadStats()).toMatchObject({ threads: 1, connections: 0 });

    const second = new Worker(q, () => 'ok');
    await second.start();
    await (second as unknown as { heartbeat: { firstBeat: Promise<void> } }).heartbeat.firstBeat;
    expect(heartbeatThreadsStarted()).toBe(started);
    expect(heartbeatThreadStats()).toEqual({ threads: 1, workers: 1, connections: 1 });
    const at = Number(await beatOf(q, second.workerId));
    await waitFor(async () => Number(await beatOf(q, second.workerId)) > at + 250, {
      what: 'the second worker beat from the thread',
    });

    await second.close();
    await waitFor(() => heartbeatThreadStats().threads === 0, { what: 'the thread ended' });
    expect(heartbeatThreadsStarted()).toBe(started);
  });

  it('a fresh worker runs its first job before the thread has started; the thread takes over after', async () => {
    const q = fx.queue<string>({ heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS });
    await q.add('first');
    let release!: () => void;
    holdHeartbeatThread(new Promise<void>((r) => (release = r)));
    const events: string[] = [];
    const worker = new Worker(q, (job) => {
      events.push(`handler ${job.data} (threads: ${heartbeatThreadStats().threads})`);
    });
    const heartbeat = (worker as unknown as { heartbeat: { firstBeat: Promise<void> } }).heartbeat;
    void heartbeat.firstBeat.then(() => events.push('thread beat'));
    await waitFor(() => events.length > 0, { what: 'first job' });
    // Meanwhile the main thread bridges: the worker stays alive past its registration beat.
    const registered = (await beatOf(q, worker.workerId))!;
    await waitFor(async () => (await beatOf(q, worker.workerId))! > registered, {
      what: 'a bridge beat',
    });
    expect((await q.clean()).deadWorkers).toBe(0);
    release();
    await heartbeat.firstBeat;
    expect(events).toEqual(['handler first (threads: 0)', 'thread beat']);
    expect(heartbeatThreadStats()).toMatchObject({ threads: 1, workers: 1 });

    // A second worker finds the thread running and leases at once as well.
    const q2 = fx.queue<string>({ heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS });
    await q2.add('second');
    const w2 = new Worker(q2, (job) => void events.push(`handler ${job.data}`));
    await waitFor(() => events.length === 3, { what: 'second job' });
    expect(heartbeatThreadStats()).toMatchObject({ threads: 1, workers: 2 });
    await Promise.all([worker.close(), w2.close()]);
    await waitFor(() => heartbeatThreadStats().threads === 0, { what: 'the thread ended' });
  });

  it("its plain connection reconnects by itself: the thread's beats come back after it is killed", async () => {
    const name = `hb-${process.pid}-${Date.now()}`;
    const client = new Redis(testRedisUrl(), { connectionName: name });
    const q = fx.queue<string>({ heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS }, client);
    const worker = new Worker(q, () => 'ok');
    await worker.start();
    await (worker as unknown as { heartbeat: { firstBeat: Promise<void> } }).heartbeat.firstBeat;
    // The thread's connection: named like the client (CLIENT SETNAME), not the client itself,
    // not a subscription nor the idle wait.
    const own = Number(await client.client('ID'));
    const threadConns = async () =>
      String(await fx.client().call('CLIENT', 'LIST', 'TYPE', 'normal'))
        .split('\n')
        .filter((l) => l.includes(` name=${name} `) && !l.includes('cmd=blmove'))
        .map((l) => Number(/\bid=(\d+)/.exec(l)![1]))
        .filter((id) => id !== own);
    await waitFor(async () => (await threadConns()).length === 1, {
      what: 'the thread connection',
    });
    const [first] = await threadConns();
    await fx.client().client('KILL', 'ID', String(first));
    const killedAt = Number((await fx.client().time())[0]) * 1000;
    // Only the thread beats now (the client was not dropped: no main-thread bridge).
    await waitFor(async () => (await beatOf(q, worker.workerId))! > killedAt + 1_000, {
      what: 'beats after the kill',
    });
    const now = await threadConns();
    expect(now).toHaveLength(1);
    expect(now[0]).not.toBe(first);
    expect(worker.liveness.heartbeat).toBe('thread');
    await worker.close();
    await client.quit();
  });

  it('no ioredis on disk: a plain connection still beats from the thread; one that needs ioredis there beats from the main thread and says so once', async () => {
    // A connection ioredis must make inside the thread (as a Sentinel or Cluster one would):
    // a natMap, which changes nothing for a standalone Redis.
    const needsIoredis = new Redis(testRedisUrl(), { natMap: {} });
    const q = fx.queue<string>({ heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS }, needsIoredis);
    const plainQueue = fx.queue<string>({ heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS });
    const [argv1, cwd] = [process.argv[1], process.cwd()];
    const errors: unknown[] = [];
    const plainErrors: unknown[] = [];
    let worker: Worker<string>;
    let plain: Worker<string>;
    process.argv[1] = path.join(os.tmpdir(), 'no-app', 'main.js');
    process.chdir(os.tmpdir());
    try {
      plain = new Worker(plainQueue, () => 'ok', { autostart: false });
      plain.on('error', (e) => plainErrors.push(e));
      worker = new Worker(q, () => 'ok', { autostart: false });
      worker.on('error', (e) => errors.push(e));
      await Promise.all([plain.start(), worker.start()]);
    } finally {
      process.argv[1] = argv1!;
      process.chdir(cwd);
    }
    const heartbeatOf = (w: Worker<string>) =>
      (w as unknown as { heartbeat: { threaded: boolean; firstBeat: Promise<void> } }).heartbeat;
    // The plain connection needs no ioredis in the thread: the thread's own beat lands.
    expect(heartbeatOf(plain).threaded).toBe(true);
    await heartbeatOf(plain).firstBeat;
    expect(plain.liveness.heartbeat).toBe('thread');
    await plain.close();
    expect(plainErrors).toEqual([]);
    expect(errors).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/cannot resolve ioredis/) }),
    ]);
    expect(heartbeatOf(worker).threaded).toBe(false);
    await waitFor(() => heartbeatThreadStats().threads === 0, { what: 'the thread ended' });
    const registered = (await beatOf(q, worker.workerId))!;
    await waitFor(async () => (await beatOf(q, worker.workerId))! > registered + 250, {
      what: 'main-thread beats',
    });
    const { id } = await q.add('job');
    await waitFor(async () => (await q.getJob(id))?.state === 'completed', { what: 'job done' });
    await worker.close();
    expect(errors).toHaveLength(1);
    expect(await beatOf(q, worker.workerId)).toBeNull();
    await needsIoredis.quit();
  });
});
