/**
 * The shared heartbeat thread: every Worker of every queue in a process beats from ONE thread
 * (one Redis connection per connection configuration); a closed worker's beats stop while the
 * others' go on; the thread is gone once the last worker left; and a fresh worker's first job
 * does not wait for the thread to start (the main thread bridges its beats meanwhile).
 */
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { Worker, type WorkQueue } from '../../../lib/index.js';
import { heartbeatThreadStats, holdHeartbeatThread } from '../../../lib/worker/heartbeat.js';
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

  // Last: after a failed start the process's workers beat from the main thread for good.
  it('no ioredis to load for the thread: the worker beats from the main thread and says so once', async () => {
    const q = fx.queue<string>({ heartbeatTimeoutMs: HEARTBEAT_TIMEOUT_MS });
    const [argv1, cwd] = [process.argv[1], process.cwd()];
    const errors: unknown[] = [];
    let worker: Worker<string>;
    process.argv[1] = path.join(os.tmpdir(), 'no-app', 'main.js');
    process.chdir(os.tmpdir());
    try {
      worker = new Worker(q, () => 'ok', { autostart: false });
      worker.on('error', (e) => errors.push(e));
      await worker.start();
    } finally {
      process.argv[1] = argv1!;
      process.chdir(cwd);
    }
    expect(errors).toEqual([
      expect.objectContaining({ message: expect.stringMatching(/cannot resolve ioredis/) }),
    ]);
    expect((worker as unknown as { heartbeat: { threaded: boolean } }).heartbeat.threaded).toBe(
      false,
    );
    expect(heartbeatThreadStats().threads).toBe(0);
    const registered = (await beatOf(q, worker.workerId))!;
    await waitFor(async () => (await beatOf(q, worker.workerId))! > registered + 250, {
      what: 'main-thread beats',
    });
    const { id } = await q.add('job');
    await waitFor(async () => (await q.getJob(id))?.state === 'completed', { what: 'job done' });
    await worker.close();
    expect(errors).toHaveLength(1);
    expect(await beatOf(q, worker.workerId)).toBeNull();
  });
});
