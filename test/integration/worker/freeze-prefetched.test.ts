/**
 * A worker process frozen (SIGSTOP: a stopped container, a long VM pause) or its event loop
 * blocked while busy, with jobs prefetched: its heartbeat lapses or its leases expire, clean()
 * takes its jobs back and another completes them. Resumed, the worker must not start them (they
 * completed already): after such a gap a prefetched job starts only once a renewal said its
 * lease is still ours. (Parked, a hand-off taken back: freeze.test.ts.)
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from '@jest/globals';
import type { WorkQueue, WorkQueueOptions } from '../../../lib/index.js';
import { handlerSandbox } from '../sandbox/support.js';
import { waitFor } from '../../support/wait.js';
import { readLog } from '../../support/worker-child-process.js';
import { frozenWorkers } from './freeze-support.js';

const { fx, dir, startChild, completeHere, beatingWorker } = frozenWorkers();

describe('a frozen worker', () => {
  it('resumed after its prefetched jobs were taken back and completed elsewhere: it never starts them', async () => {
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<string>(queueOptions);
    const execLog = path.join(dir, 'exec-prefetched.log');
    const child = startChild(q, queueOptions, {
      // (No clean in the child: nothing takes a lease back before the test's own clean().)
      workerOptions: { concurrency: 1, prefetch: 3, cleanIntervalMs: 0 },
      // The first handler holds its slot until released (SIGUSR2): nothing else can start before
      // the freeze, however late a loaded machine lets this test send it.
      mode: 'hold',
      execLog,
    });
    await child.ready;
    await beatingWorker(q);

    // One call: the first is handed off to the idle worker, the call that adopts it leases the
    // other three (a busy worker does not wait for jobs added later).
    const added = await q.addBulk(
      [1, 2, 3, 4].map((i) => ({ data: String(i), opts: { id: `p-${i}` } })),
    );
    const ids = added.map((a) => a.id);
    const [first, ...prefetched] = ids as [string, ...string[]];
    // The first runs (its handler holds), the other three wait in the child's buffer.
    await waitFor(
      async () =>
        readLog(execLog).length === 1 &&
        (await Promise.all(ids.map((id) => q.getJob(id)))).every((j) => j?.state === 'leased'),
      { what: 'one job running and three prefetched in the child', timeoutMs: 10_000 },
    );
    child.process.kill('SIGSTOP');
    expect(readLog(execLog).map((l) => l.id)).toEqual([first]);
    await waitFor(async () => (await q.clean()).reclaimedFromWorkers > 0, {
      what: 'the frozen worker taken for dead, its jobs taken back',
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    await completeHere(q, prefetched);

    // The first handler returns as the worker resumes (the signal waits while it is stopped): its
    // slot frees while the renewal after the gap is on its way, and must not start a lost job.
    child.process.kill('SIGUSR2');
    child.process.kill('SIGCONT');
    const { id: after } = await q.add('y', { id: 'p-after' });
    await waitFor(() => readLog(execLog).some((l) => l.id === after || prefetched.includes(l.id)), {
      what: 'the resumed worker runs another job',
      timeoutMs: 15_000,
    });
    expect(readLog(execLog).map((l) => l.id)).toEqual([first, after]);
    for (const id of prefetched) {
      expect(await q.getJob(id)).toMatchObject({ state: 'completed', attemptsMade: 1 });
    }
  }, 40_000);

  it.each([
    { concurrency: 1, prefetch: 3, jobs: 4, how: 'prefetched' },
    // (Both start in one go: the first handler blocks before the second would start.)
    { concurrency: 2, prefetch: 0, jobs: 2, how: 'leased in the same call as the blocking one' },
  ])(
    'its event loop blocked past its leases: jobs $how, completed elsewhere, never start',
    async ({ concurrency, prefetch, jobs, how }) => {
      const queueOptions: WorkQueueOptions = { leaseMs: 1_000 };
      const q = fx.queue<string>(queueOptions);
      const execLog = path.join(dir, `exec-blocked-${concurrency}.log`);
      // Added first: the child's first lease call takes them all (one to run, the others waiting).
      const ids: string[] = [];
      for (let i = 1; i <= jobs; i++) ids.push((await q.add(String(i), { id: `b-${i}` })).id);
      const [first, ...prefetched] = ids as [string, ...string[]];
      const child = startChild(q, queueOptions, {
        workerOptions: { concurrency, prefetch, cleanIntervalMs: 0 },
        // Long enough for the leases to lapse and the jobs to complete here meanwhile.
        mode: 'busy',
        busyMs: 8_000,
        execLog,
      });
      await child.ready;
      await waitFor(
        async () =>
          readLog(execLog).length === 1 &&
          (await Promise.all(ids.map((id) => q.getJob(id)))).every((j) => j?.state === 'leased'),
        { what: `one job blocking the child and the others ${how}`, timeoutMs: 10_000 },
      );
      const blockedAt = Date.now();
      let reclaimed = 0;
      await waitFor(async () => (reclaimed += (await q.clean()).reclaimed) >= prefetched.length, {
        what: 'the expired leases taken back',
        timeoutMs: 10_000,
        intervalMs: 100,
      });
      await completeHere(q, prefetched);
      // (The premise: all that happened while the child's loop was still blocked.)
      expect(Date.now() - blockedAt).toBeLessThan(8_000);

      const { id: after } = await q.add('y', { id: 'b-after' });
      await waitFor(
        () => readLog(execLog).some((l) => l.id === after || prefetched.includes(l.id)),
        {
          what: 'the unblocked worker runs another job',
          timeoutMs: 20_000,
        },
      );
      expect(readLog(execLog).map((l) => l.id)).toEqual([first, after]);
    },
    40_000,
  );

  it('resumed with a started job waiting for its sandbox, taken back and completed elsewhere: it never runs there', async () => {
    // (The sandbox pool gave the freed sandbox straight to the waiting job: its handler ran for a
    // job completed seconds before, its lease lost only learned once it ran.)
    const queueOptions: WorkQueueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<string>(queueOptions);
    const release = path.join(dir, 'sandbox-release');
    const marker = path.join(dir, 'sandbox-waiting-started');
    const child = startChild(q, queueOptions, {
      workerOptions: { concurrency: 2, prefetch: 0, cleanIntervalMs: 0 },
      mode: 'work',
      sandbox: handlerSandbox('process', { poolSize: 1 }),
    });
    await child.ready;
    await beatingWorker(q);
    // A holds the one sandbox until `release` exists; B waits for it (started: its slot taken).
    const ended = path.join(dir, 'sandbox-a-ended');
    const started = path.join(dir, 'sandbox-a-started');
    const a = await (q as WorkQueue<unknown>).add(
      { release, started, ended },
      { name: 'held', id: 's-a' },
    );
    const b = await (q as WorkQueue<unknown>).add({ marker }, { name: 'mark', id: 's-b' });
    await waitFor(
      async () =>
        // (Its progress answered: frozen before the answer came, A's handler would wait for it.)
        existsSync(started) && (await q.getJob(b.id))?.state === 'leased',
      { what: 'A running in the sandbox, B leased and waiting for it', timeoutMs: 20_000 },
    );
    child.process.kill('SIGSTOP');
    await waitFor(async () => (await q.clean()).reclaimedFromWorkers > 0, {
      what: 'the frozen worker taken for dead, its jobs taken back',
      timeoutMs: 10_000,
      intervalMs: 100,
    });
    await completeHere(q, [a.id, b.id]);
    // A's handler ends (its sandbox is a process of its own, not frozen): the sandbox is free
    // when the worker resumes, before its renewal can say B's lease is lost.
    writeFileSync(release, '');
    await waitFor(() => existsSync(ended), { what: "A's handler ended", timeoutMs: 10_000 });
    child.process.kill('SIGCONT');
    const c = await (q as WorkQueue<unknown>).add({ release }, { name: 'held', id: 's-c' });
    await waitFor(async () => (await q.getJob(c.id))?.state === 'completed', {
      what: 'the resumed worker runs a job in its sandbox',
      timeoutMs: 20_000,
    });
    // B ('mark' appends its id to `marker` as it starts) never started there.
    expect(existsSync(marker)).toBe(false);
    for (const id of [a.id, b.id])
      expect(await q.getJob(id)).toMatchObject({ state: 'completed', attemptsMade: 1 });
  }, 60_000);
});
