/**
 * A job's abort reaches its sandbox: cancel and `jobTimeoutMs` abort the signal the sandboxed
 * handler holds (with the worker's reason); a sandbox that ignores it is terminated after
 * `abortGraceMs` and replaced.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Job, SandboxMode, Worker, WorkQueue } from '../../../lib/index.js';
import type { Where } from '../../fixtures/sandbox/handler.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { handlerSandbox, MODES, sandboxWorkers } from './support.js';

const fx = new QueueFixture();
const dir = mkdtempSync(path.join(tmpdir(), 'wq-sandbox-abort-'));
afterAll(async () => {
  await fx.cleanup();
  rmSync(dir, { recursive: true, force: true });
});
const worker = sandboxWorkers();

type Data = Record<string, unknown>;
let markers = 0;

/** Wait until job `id` reports (as its progress) the sandbox it runs in. */
const runningIn = (q: WorkQueue<Data, unknown>, id: string) =>
  waitFor(async () => (await q.getJob(id))?.progress as Where | undefined, {
    timeoutMs: 10_000,
    what: `job ${id} running`,
  });

/** The sandbox the next job runs in (the pool has one). */
async function nextSandbox(q: WorkQueue<Data, unknown>, w: Worker<Data, unknown>): Promise<Where> {
  const done = new Promise<Where>((r) =>
    w.on('completed', (job: Job<Data>, res) => job.name === 'where' && r(res as Where)),
  );
  await q.add({}, { name: 'where' });
  return done;
}

const same = (a: Where, b: Where) => a.pid === b.pid && a.threadId === b.threadId;

describe.each(MODES)('a %s sandbox', (mode: SandboxMode) => {
  it("cancel aborts the sandboxed handler's signal (the sandbox lives on)", async () => {
    const q = fx.queue<Data, unknown>();
    const marker = path.join(dir, `cancel-${mode}-${++markers}`);
    // A long grace: the sandbox must stop by itself, not be terminated.
    const w = worker(q, handlerSandbox(mode, { poolSize: 1, abortGraceMs: 30_000 }));
    const { id } = await q.add({ marker }, { name: 'abortable' });
    const at = await runningIn(q, id);
    expect(await q.cancel(id)).toBe(true);
    await waitFor(() => readFileSync(marker, 'utf8').length > 0, { what: 'the abort seen' });
    expect(readFileSync(marker, 'utf8')).toMatch(/^LEASE_LOST /);
    expect(same(await nextSandbox(q, w), at)).toBe(true);
  }, 60_000);

  it("jobTimeoutMs aborts the sandboxed handler's signal; the job fails as timed out", async () => {
    const q = fx.queue<Data, unknown>({ maxAttempts: 1 });
    const marker = path.join(dir, `timeout-${mode}-${++markers}`);
    const w = worker(q, handlerSandbox(mode, { poolSize: 1, abortGraceMs: 30_000 }), {
      jobTimeoutMs: 1_500,
    });
    const dead = new Promise<unknown>((r) => w.on('dead', (_, e) => r(e)));
    const { id } = await q.add({ marker }, { name: 'abortable' });
    const at = await runningIn(q, id);
    expect(await dead).toMatchObject({ message: expect.stringMatching(/timed out after 1500 ms/) });
    await waitFor(() => readFileSync(marker, 'utf8').length > 0, { what: 'the abort seen' });
    expect(readFileSync(marker, 'utf8')).toMatch(/timed out after 1500 ms/);
    expect(same(await nextSandbox(q, w), at)).toBe(true);
  }, 60_000);

  it('a job waiting for the replacement of an aborted job that then ends runs in that sandbox at once', async () => {
    // The cancelled job ends within its grace while its replacement is still starting (its
    // setup waits at a gate): the job waiting for a sandbox takes the one ready now, and the
    // replacement goes. Before, it waited for the replacement (here: its 30 s start timeout).
    const q = fx.queue<Data, unknown>({ maxAttempts: 1 });
    const gate = path.join(dir, `gate-${mode}-${++markers}`);
    const [marker, release] = [`${gate}.marker`, `${gate}.release`];
    const setupData = { gate };
    const w = worker(q, handlerSandbox(mode, { poolSize: 1, abortGraceMs: 30_000, setupData }));
    const dead = new Promise<unknown>((r) => w.on('dead', (_, e) => r(e)));
    try {
      const { id } = await q.add({ marker, release }, { name: 'abortable' });
      const at = await runningIn(q, id);
      writeFileSync(gate, ''); // sandboxes starting from now on wait at the gate
      expect(await q.cancel(id)).toBe(true);
      await waitFor(() => existsSync(marker), { what: 'the abort seen' });
      const next = Promise.race([nextSandbox(q, w), dead]);
      await waitFor(() => existsSync(`${gate}.seen`), {
        timeoutMs: 20_000,
        what: 'the replacement starting',
      });
      writeFileSync(release, ''); // the cancelled job ends now
      const where = await next;
      expect(where).toMatchObject({ pid: expect.any(Number) });
      expect(same(where as Where, at)).toBe(true);
    } finally {
      writeFileSync(`${gate}.open`, '');
    }
  }, 60_000);

  it('a sandbox terminated for its grace whose job end was on the way is not given the waiting job', async () => {
    // Pool of one, slots for two: W waits behind the cancelled job, whose replacement waits at
    // the gate. The cancelled job ends within its grace, but this process reads that only after
    // its grace timer terminated the sandbox (its event loop held meanwhile): that sandbox is
    // going, so W waits for the replacement rather than run in it and fail as SANDBOX_DIED.
    const q = fx.queue<Data, unknown>({ maxAttempts: 1 });
    const gate = path.join(dir, `gate-${mode}-${++markers}`);
    const [marker, release] = [`${gate}.marker`, `${gate}.release`];
    const graceMs = 1_000;
    const sandbox = { poolSize: 1, abortGraceMs: graceMs, setupData: { gate } };
    const w = worker(q, handlerSandbox(mode, sandbox), { concurrency: 2 });
    const dead = new Promise<unknown>((r) => w.on('dead', (_, e) => r(e)));
    try {
      const { id } = await q.add({ marker, release }, { name: 'abortable' });
      const at = await runningIn(q, id);
      writeFileSync(gate, '');
      const next = Promise.race([nextSandbox(q, w), dead]); // W: waits for the sandbox
      await waitFor(async () => (await q.counts()).leased === 2, { what: 'W leased' });
      const aborted = Date.now();
      expect(await q.cancel(id)).toBe(true);
      await waitFor(() => existsSync(marker), { what: 'the abort seen' });
      writeFileSync(release, ''); // the job ends now, in the sandbox...
      // ...while this event loop is held past the grace: its timer's turn comes first.
      while (Date.now() < aborted + graceMs + 500);
      writeFileSync(`${gate}.open`, '');
      const where = await next;
      expect(where).toMatchObject({ pid: expect.any(Number) });
      expect(same(where as Where, at)).toBe(false);
    } finally {
      writeFileSync(`${gate}.open`, '');
    }
  }, 60_000);

  it("close(): a job its close aborted may take its sandbox's abortGraceMs to end", async () => {
    // Its handler needs 5.5 s after the abort, within the 8 s grace (and longer than the 5 s a
    // sandbox's teardown is given): close() waits for it, rather than terminate it at 5 s.
    const q = fx.queue<Data, unknown>();
    const marker = path.join(dir, `close-${mode}-${++markers}`);
    const w = worker(q, handlerSandbox(mode, { poolSize: 1, abortGraceMs: 8_000 }));
    const errors: string[] = [];
    w.on('error', (e) => errors.push(String(e)));
    const { id } = await q.add({ marker, cleanupMs: 5_500 }, { name: 'abortable' });
    await runningIn(q, id);
    await w.close({ timeoutMs: 0 });
    expect(readFileSync(marker, 'utf8')).toMatch(/^LEASE_LOST worker closing\ncleaned\n$/);
    // Redis answered: the wait for the sandbox is not out of its calls' budget (it said "Redis
    // did not answer").
    expect(errors).toEqual([]);
    expect((await q.counts()).workers).toBe(0);
  }, 60_000);

  it('a job behind one that ignores its abort gets another sandbox, not a wait its timeout counts', async () => {
    // One sandbox, one slot: the cancelled job's slot is the next job's at once, while its
    // sandbox runs on for its grace (8 s, twice the next job's timeout; the worker's close waits
    // for its end). The next job waited for it, and timed out.
    const q = fx.queue<Data, unknown>({ maxAttempts: 1 });
    const w = worker(q, handlerSandbox(mode, { poolSize: 1, abortGraceMs: 8_000 }), {
      jobTimeoutMs: 4_000,
    });
    const dead = new Promise<unknown>((r) => w.on('dead', (_, e) => r(e)));
    const { id } = await q.add({}, { name: 'hang' });
    const at = await runningIn(q, id);
    expect(await q.cancel(id)).toBe(true);
    const next = await Promise.race([nextSandbox(q, w), dead]);
    expect(next).toMatchObject({ pid: expect.any(Number) });
    expect(same(next as Where, at)).toBe(false);
  }, 60_000);

  it('the sandbox of an aborted job that then ends does not join its replacement: never two at once', async () => {
    // Pool of one, slots for three: the cancelled job's sandbox runs on (it ignores its signal
    // for 1.5 s) while its replacement serves the jobs behind it; then it must go, not serve
    // those waiting beside the replacement (two jobs at once in a pool of one, for good).
    const q = fx.queue<Data, unknown>();
    const w = worker(q, handlerSandbox(mode, { poolSize: 1, abortGraceMs: 60_000 }), {
      concurrency: 3,
    });
    const spans: Array<Where & { start: number; end: number }> = [];
    w.on('completed', (job: Job<Data>, r) => job.name === 'span' && spans.push(r as never));
    const { id } = await q.add({ ms: 1_500 }, { name: 'sleep' });
    await waitFor(async () => (await q.getJob(id))?.state === 'leased', { what: 'running' });
    await q.addBulk(
      Array.from({ length: 8 }, () => ({ data: { ms: 300 }, opts: { name: 'span' } })),
    );
    expect(await q.cancel(id)).toBe(true);
    await waitFor(() => spans.length === 8, { timeoutMs: 30_000, what: '8 spans' });
    spans.sort((a, b) => a.start - b.start);
    const overlaps = spans.filter((s, i) => i > 0 && s.start < spans[i - 1]!.end);
    expect(overlaps).toEqual([]);
  }, 60_000);

  it.each(['cancel', 'jobTimeoutMs'])(
    'a sandbox that ignores the abort (%s) is terminated after abortGraceMs and replaced',
    async (how) => {
      // The next job may time out too while the replacement starts (jobTimeoutMs counts the
      // wait for a sandbox): it has attempts to spare, the hanging one has none.
      const q = fx.queue<Data, unknown>({
        maxAttempts: 5,
        backoff: { type: 'fixed', delayMs: 10 },
      });
      const w = worker(
        q,
        handlerSandbox(mode, { poolSize: 1, abortGraceMs: 200 }),
        how === 'jobTimeoutMs' ? { jobTimeoutMs: 1_500 } : {},
      );
      const { id } = await q.add({}, { name: 'hang', maxAttempts: 1 });
      const at = await runningIn(q, id);
      if (how === 'cancel') expect(await q.cancel(id)).toBe(true);
      const next = await nextSandbox(q, w);
      expect(same(next, at)).toBe(false);
      if (mode === 'process') expect(() => process.kill(at.pid, 0)).toThrow(/ESRCH/);
    },
    60_000,
  );
});
