/**
 * Crash isolation: a sandbox that exits, runs out of memory or is SIGKILLed fails only the job it
 * was running (SANDBOX_DIED: an attempt; dead-lettered when it does so every time), the jobs in
 * the other sandboxes complete on their first attempt, and the pool starts a replacement.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { WorkQueueError } from '../../../lib/index.js';
import type { Job, SandboxMode, SandboxOptions, Worker, WorkQueue } from '../../../lib/index.js';
import type { Where } from '../../fixtures/sandbox/handler.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { startWorkerChild } from '../../support/worker-child-process.js';
import { waitFor } from '../../support/wait.js';
import { handlerSandbox, MODES, sandboxWorkers } from './support.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = sandboxWorkers();

type Data = Record<string, unknown>;

/**
 * A worker of `sandbox` at concurrency 2 on a queue holding the job `name` (failing at most
 * twice) and 6 jobs of 300 ms beside it; resolves once all have ended.
 */
async function crashBeside(name: string, sandbox: SandboxOptions) {
  const q = fx.queue<Data, unknown>({
    maxAttempts: 2,
    backoff: { type: 'fixed', delayMs: 50 },
  });
  const { id } = await q.add({ code: 1 }, { name });
  await q.addBulk(
    Array.from({ length: 6 }, () => ({ data: { ms: 300 }, opts: { name: 'sleep' } })),
  );
  const w = worker(q, sandbox, { concurrency: 2 });
  const completed: Job<Data>[] = [];
  const failed: Array<[Job<Data>, unknown]> = [];
  const dead: string[] = [];
  w.on('completed', (job) => completed.push(job));
  w.on('failed', (job, e) => failed.push([job, e]));
  w.on('dead', (job) => dead.push(job.id));
  await waitFor(() => completed.length === 6 && dead.length === 1, {
    timeoutMs: 30_000,
    what: '6 jobs completed and 1 dead',
  });
  return { q, w, id, completed, failed, dead };
}

/** The pool still runs jobs: one more completes. */
async function recovers(q: WorkQueue<Data, unknown>, w: Worker<Data, unknown>): Promise<Where> {
  const done = new Promise<Where>((r) =>
    w.on('completed', (j, res) => {
      if (j.name === 'where') r(res as Where);
    }),
  );
  await q.add({}, { name: 'where' });
  return done;
}

describe.each(MODES)('a %s sandbox that dies', (mode: SandboxMode) => {
  it('process.exit(1): that job fails each attempt and is dead-lettered; the others complete once; the pool recovers', async () => {
    const { q, w, id, completed, failed, dead } = await crashBeside('exit', handlerSandbox(mode));
    expect(dead).toEqual([id]);
    expect(failed.map(([job]) => job.id)).toEqual([id, id]);
    for (const [, e] of failed) {
      expect(e).toBeInstanceOf(WorkQueueError);
      expect(e).toMatchObject({ code: 'SANDBOX_DIED' });
      expect((e as Error).message).toMatch(/exited with code 1/);
    }
    expect(completed.map((j) => j.attempt)).toEqual([1, 1, 1, 1, 1, 1]);
    const info = await q.getJob(id);
    expect(info).toMatchObject({ state: 'dead', attemptsMade: 2 });
    expect(info?.deadReason).toMatch(/SANDBOX_DIED|died running it/);
    await recovers(q, w);
  }, 60_000);

  it('out of memory (memoryLimitMb): that job fails, the others complete, the pool recovers', async () => {
    const { q, w, failed, completed } = await crashBeside(
      'oom',
      handlerSandbox(mode, { memoryLimitMb: 64 }),
    );
    expect(failed).toHaveLength(2);
    expect(failed[0]![1]).toMatchObject({ code: 'SANDBOX_DIED' });
    const why = (failed[0]![1] as Error).message;
    if (mode === 'thread') expect(why).toMatch(/ERR_WORKER_OUT_OF_MEMORY: /);
    else expect(why).toMatch(/killed by SIG|exited with code/);
    expect(completed.map((j) => j.attempt)).toEqual([1, 1, 1, 1, 1, 1]);
    await recovers(q, w);
  }, 60_000);
});

describe('a process sandbox SIGKILLed while it runs a job', () => {
  it('fails that attempt only; the retry runs in the replacement and completes', async () => {
    const q = fx.queue<Data, unknown>({ maxAttempts: 2, backoff: { type: 'fixed', delayMs: 50 } });
    const w = worker(q, handlerSandbox('process'));
    const failed: unknown[] = [];
    const completed: Array<[Job, unknown]> = [];
    w.on('failed', (_, e) => failed.push(e));
    w.on('completed', (job, r) => completed.push([job, r]));
    const { id } = await q.add({}, { name: 'hangOnce' });
    const at = await waitFor(async () => (await q.getJob(id))?.progress as Where | undefined, {
      timeoutMs: 10_000,
      what: 'the job reporting its sandbox',
    });
    expect(at.pid).not.toBe(process.pid);
    process.kill(at.pid, 'SIGKILL');
    await waitFor(() => completed.length === 1, { timeoutMs: 15_000, what: 'the retry completed' });
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ code: 'SANDBOX_DIED' });
    expect((failed[0] as Error).message).toMatch(/killed by SIGKILL/);
    const [job, result] = completed[0]!;
    expect(job.attempt).toBe(2);
    expect((result as Where).pid).not.toBe(at.pid);
  }, 60_000);
});

/** Whether process `pid` runs (a zombie, ended and not reaped yet, does not). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = `/proc/${pid}/stat`;
  if (!existsSync(stat)) return true;
  // "<pid> (<comm>) <state> …": the state after the last ')'.
  const text = readFileSync(stat, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2, text.lastIndexOf(')') + 3) !== 'Z';
}

describe('the worker process of a process sandbox SIGKILLed while its job spins', () => {
  it('takes the sandbox with it: no orphan left spinning (its event loop never sees the disconnect)', async () => {
    const q = fx.queue<Data, unknown>();
    const child = startWorkerChild({
      redisUrl: testRedisUrl(),
      queue: q.name,
      queueOptions: { prefix: q.options.prefix },
      workerOptions: {},
      mode: 'work',
      sandbox: handlerSandbox('process'),
    });
    let at: Where | undefined;
    try {
      await child.ready;
      // Reports where it runs, then spins for ever without yielding.
      const { id } = await q.add({}, { name: 'hang' });
      at = await waitFor(async () => (await q.getJob(id))?.progress as Where | undefined, {
        timeoutMs: 10_000,
        what: 'the job reporting its sandbox',
      });
      expect(at.pid).not.toBe(child.pid);
      expect(running(at.pid)).toBe(true);
      await child.kill();
      await waitFor(() => !running(at!.pid), {
        timeoutMs: 5_000,
        what: 'the sandbox process gone',
      });
    } finally {
      await child.kill();
      // (Failed: no orphan left spinning on the test machine.)
      if (at && running(at.pid)) process.kill(at.pid, 'SIGKILL');
    }
  }, 30_000);
});

describe('a sandbox killed from outside while it loads (process mode)', () => {
  it("is a crash, not a module that cannot run: the worker's start tries another and starts", async () => {
    // (Its start failed INVALID_OPTIONS, and an autostarted worker never started.)
    const dir = mkdtempSync(path.join(tmpdir(), 'wq-sandbox-killed-'));
    try {
      const gate = path.join(dir, 'gate');
      writeFileSync(gate, '');
      const q = fx.queue<Data, unknown>();
      const w = worker(q, handlerSandbox('process', { poolSize: 1, setupData: { gate } }), {
        autostart: false,
      });
      const errors: string[] = [];
      w.on('error', (e) => errors.push(String(e)));
      const started = w.start();
      // The first sandbox waits in its setup: killed there, from outside.
      const pid = await waitFor(
        () => (existsSync(`${gate}.seen`) ? Number(readFileSync(`${gate}.seen`, 'utf8')) : 0),
        { what: 'the first sandbox loading', timeoutMs: 20_000 },
      );
      process.kill(pid, 'SIGKILL');
      // The next one loads (the gate opens), and the worker runs jobs.
      await waitFor(() => errors.length > 0, { what: 'the kill reported', timeoutMs: 20_000 });
      writeFileSync(`${gate}.open`, '');
      await started;
      expect(errors).toEqual([
        expect.stringMatching(/ended before it was ready: killed by SIGKILL: starting another$/),
      ]);
      const { id } = await q.add({}, { name: 'where' });
      await waitFor(async () => (await q.getJob(id))?.state === 'completed', {
        what: 'a job run',
        timeoutMs: 20_000,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
