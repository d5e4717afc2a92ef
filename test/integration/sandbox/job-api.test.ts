/**
 * Sandboxed handlers (`new Worker(queue, { file, mode })`), in a thread and in a process: the
 * job the handler gets (fields, progress, extend, signal), its result and errors as the worker
 * sees them, data and results crossing by structured clone, the pool's reuse of sandboxes.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { NonRetryableError, WorkQueueError } from '../../../lib/index.js';
import type { FailOutcome } from '../../../lib/index.js';
import type { Echo, Where } from '../../fixtures/sandbox/handler.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { handlerSandbox, MODES, sandboxWorkers } from './support.js';

const fx = new QueueFixture();
// Every temp file of this file's tests lives here, removed at the end.
const tmp = mkdtempSync(path.join(tmpdir(), 'wq-sandbox-job-api-'));
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
  return fx.cleanup();
});
const worker = sandboxWorkers();

describe.each(MODES)('a %s sandbox', (mode) => {
  it('gets the job (id, data, name, attempt, progress, extend) and returns its result', async () => {
    const q = fx.queue<unknown, unknown>({ storeResults: { ttlMs: 60_000 } });
    const w = worker(q, handlerSandbox(mode));
    const completed = new Promise<unknown>((r) => w.on('completed', (_, result) => r(result)));
    const { id } = await q.add(
      { x: [1, 2], s: 'é' },
      { name: 'echo', maxAttempts: 4, group: 'tenant-1' },
    );
    const echo = (await completed) as Echo;
    const info = (await q.getJob(id))!;
    expect(echo).toMatchObject({
      id,
      data: { x: [1, 2], s: 'é' },
      name: 'echo',
      attempt: 1,
      maxAttempts: 4,
      queueName: q.name,
      // Its times and group, as an in-process handler sees them.
      addedAt: info.addedAt,
      startedAt: info.startedAt,
      group: 'tenant-1',
      isBuffer: false,
      progressed: true,
      extended: true,
    });
    // Every method of the worker's job, called back across the boundary (and rateLimited, local).
    expect(echo.methods).toEqual(expect.arrayContaining(['extend', 'progress', 'rateLimited']));
    // Its fields, those undefined (traceContext) included, whichever way it crossed.
    expect(echo.fields).toEqual([
      'addedAt',
      'attempt',
      'data',
      'group',
      'id',
      'maxAttempts',
      'name',
      'parent',
      'priority',
      'queueName',
      'signal',
      'startedAt',
      'traceContext',
    ]);
    // It ran elsewhere: another thread of this process, or another process.
    if (mode === 'thread')
      expect(echo).toMatchObject({ pid: process.pid, threadId: expect.any(Number) });
    else expect(echo.pid).not.toBe(process.pid);
    expect(info.result).toEqual(echo);
  });
});

describe.each(MODES)('a %s sandbox: outcomes', (mode) => {
  /** Run one job of `name` to its first failure; the worker's 'failed' event's error and outcome. */
  async function failure(name: string, data: unknown = {}) {
    const q = fx.queue<unknown, unknown>({ maxAttempts: 1 });
    const w = worker(q, handlerSandbox(mode));
    const failed = new Promise<[unknown, FailOutcome]>((r) =>
      w.on('failed', (_, e, outcome) => r([e, outcome])),
    );
    await q.add(data, { name });
    return failed;
  }

  it('a NonRetryableError stays one: the job is dead-lettered at once', async () => {
    const q = fx.queue<unknown, unknown>({ maxAttempts: 5 });
    const w = worker(q, handlerSandbox(mode));
    const dead = new Promise<unknown>((r) => w.on('dead', (_, e) => r(e)));
    const { id } = await q.add({}, { name: 'nonRetryable' });
    const e = await dead;
    expect(e).toBeInstanceOf(NonRetryableError);
    expect(e).toMatchObject({ message: 'never again', retryable: false });
    expect(await q.getJob(id)).toMatchObject({ state: 'dead', attemptsMade: 1 });
  });

  it("a WorkQueueError keeps its code, another error its name, fields and the sandbox's stack", async () => {
    const [typed] = await failure('typed');
    expect(typed).toBeInstanceOf(WorkQueueError);
    expect(typed).toMatchObject({ code: 'NOT_FOUND', message: 'typed in the sandbox' });
    const [custom, outcome] = await failure('custom');
    expect(outcome).toBe('dead');
    expect(custom).toBeInstanceOf(Error);
    expect(custom).toMatchObject({
      name: 'CustomError',
      message: 'custom failure',
      code: 'E_CUSTOM',
      detail: { n: 1 },
    });
    expect((custom as Error).stack).toContain('fixtures/sandbox/handler.ts');
  });

  it('a result that cannot cross (a function) fails the attempt with ENCODE_FAILED, not a hang', async () => {
    const [e] = await failure('uncloneable');
    expect(e).toBeInstanceOf(WorkQueueError);
    expect(e).toMatchObject({ code: 'ENCODE_FAILED' });
    expect((e as Error).message).toMatch(/cannot cross the sandbox boundary/);
  });

  it("a job method's arguments that cannot cross reject its call with ENCODE_FAILED", async () => {
    const q = fx.queue<unknown, unknown>();
    const w = worker(q, handlerSandbox(mode));
    const completed = new Promise<unknown>((r) => w.on('completed', (_, result) => r(result)));
    await q.add({}, { name: 'uncloneableArgs' });
    expect(await completed).toMatch(
      /^ENCODE_FAILED: job\.progress\(\): its arguments cannot cross/,
    );
  });

  it('setupData that cannot cross fails start() with INVALID_OPTIONS', async () => {
    const q = fx.queue<unknown, unknown>();
    const w = worker(q, handlerSandbox(mode, { setupData: { f: () => 1 } }), { autostart: false });
    await expect(w.start()).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      problems: [expect.stringMatching(/setupData cannot cross to it \(structured clone\)/)],
    });
  });

  it.each([
    ['rateLimited', 60_000, 60_000],
    ['rateLimitError', 60_000, 60_000],
    // (Infinity and NaN cross as the held ms: a process's JSON would make them null.)
    ['rateLimited', 'Infinity', 86_400_000],
    ['rateLimitError', 'not a number', 1_000],
  ] as const)(
    '%s(%s): the job goes back without counting an attempt, the queue held %s ms, as in-process',
    async (name, ms, held) => {
      const q = fx.queue<unknown, unknown>();
      const w = worker(q, handlerSandbox(mode), { prefetch: 0 });
      const failed: unknown[] = [];
      w.on('failed', (_, e) => failed.push(e));
      const spy = q.rateLimited.bind(q);
      const limited: number[] = [];
      q.rateLimited = (lease, ms) => {
        limited.push(ms);
        return spy(lease, ms);
      };
      const { id } = await q.add({ ms }, { name });
      await waitFor(() => limited.length === 1, { timeoutMs: 10_000, what: 'rate limited' });
      expect(limited).toEqual([held]);
      await waitFor(async () => (await q.getJob(id))?.state === 'pending', { what: 'job back' });
      expect((await q.getJob(id))?.attemptsMade ?? 0).toBe(0);
      expect(failed).toEqual([]);
    },
  );

  it('data and results cross as structured clones: what JSON would lose or change stays', async () => {
    // (Results not kept: the worker's 'completed' event has the value as it crossed, unencoded.)
    const q = fx.queue<unknown, unknown>({ keepCompleted: false });
    const w = worker(q, handlerSandbox(mode));
    const completed = new Promise<unknown>((r) => w.on('completed', (_, result) => r(result)));
    // Data as JSON gives it (a queue's codec): it crosses as it is; the result as a clone.
    await q.add(
      { s: 'é\u2028\n', n: [0.1, -3, 1e300], o: { deep: { er: [null, true] } } },
      { name: 'clones' },
    );
    const r = (await completed) as Record<string, unknown>;
    expect(r.got).toEqual({
      s: 'é\u2028\n',
      n: [0.1, -3, 1e300],
      o: { deep: { er: [null, true] } },
    });
    expect(r.at).toEqual(new Date(5));
    expect(r.map).toEqual(new Map([['a', { b: [1] }]]));
    expect(r.set).toEqual(new Set([1, 2]));
    expect('undef' in r && r.undef === undefined).toBe(true);
    expect(Object.is(r.negZero, -0)).toBe(true);
    expect(r.nan).toBeNaN();
    expect(r.big).toBe(10n);
    expect(1 in (r.sparse as unknown[])).toBe(false);
    expect(r.sparse).toHaveLength(3);
    expect(r.bytes).toEqual(new Uint8Array([1, 2]));
  });

  it('a Buffer payload arrives as a Buffer; setupData reaches the module setup', async () => {
    const q = fx.queue<Buffer, unknown>({ codec: 'buffer' });
    const w = worker(q, handlerSandbox(mode, { setupData: { tenant: 'a', at: new Date(0) } }));
    const results: unknown[] = [];
    w.on('completed', (_, r) => results.push(r));
    await q.add(Buffer.from([0, 1, 255]), { name: 'echo' });
    await q.add(Buffer.from('x'), { name: 'setup' });
    await waitFor(() => results.length === 2, { timeoutMs: 10_000, what: '2 jobs' });
    const echo = results.find((r) => (r as Echo).name === 'echo') as Echo;
    expect(echo.isBuffer).toBe(true);
    expect(Buffer.from(echo.data as Uint8Array)).toEqual(Buffer.from([0, 1, 255]));
    expect(results).toContainEqual({ tenant: 'a', at: new Date(0) });
  });

  it('job methods called after its run ended answer as in-process (lease-bound: false); the next job runs', async () => {
    const q = fx.queue<unknown, unknown>();
    const w = worker(q, handlerSandbox(mode, { poolSize: 1 }));
    const completed: string[] = [];
    const failed: string[] = [];
    w.on('completed', (job) => completed.push(job.id));
    w.on('failed', (job, e) => failed.push(`${job.id}: ${String(e)}`));
    const marker = path.join(mkdtempSync(path.join(tmp, 'late-')), 'answers');
    const late = await q.add({ marker }, { name: 'late' });
    // Runs in the one sandbox while the late calls are made (a rejection unhandled there ended
    // the sandbox and failed this job).
    const next = await q.add({ ms: 300 }, { name: 'sleep' });
    await waitFor(() => completed.length === 2 || failed.length > 0, {
      timeoutMs: 10_000,
      what: 'both jobs',
    });
    expect(failed).toEqual([]);
    expect(completed).toEqual([late.id, next.id]);
    await waitFor(() => existsSync(marker), { what: 'the awaited late calls answered' });
    // The lease-bound ones false; one that is not answers as the worker's job does.
    expect(JSON.parse(readFileSync(marker, 'utf8'))).toEqual([false, false, false, false, {}]);
  });

  it('updateData: job.data is the new data in the sandbox too, and in Redis', async () => {
    const q = fx.queue<unknown, unknown>();
    const w = worker(q, handlerSandbox(mode));
    const done = new Promise<unknown>((r) => w.on('completed', (_, res) => r(res)));
    const { id } = await q.add({ step: 1 }, { name: 'update' });
    expect(await done).toEqual({ ok: true, data: { step: 2 } });
    expect(await q.getJob(id)).toMatchObject({ data: { step: 2 } });
  });

  it('reuses its sandboxes: 8 jobs at concurrency 4 run in the pool of 2', async () => {
    const q = fx.queue<unknown, unknown>();
    const w = worker(q, handlerSandbox(mode, { poolSize: 2 }), { concurrency: 4 });
    const where: Where[] = [];
    w.on('completed', (_, r) => where.push(r as Where));
    // The jobs end once released: by then the second sandbox started (lazily, once a job
    // waited for one) and runs one of them, however long its start took.
    const release = path.join(mkdtempSync(path.join(tmp, 'held-')), 'release');
    const jobs = await q.addBulk(
      Array.from({ length: 8 }, () => ({ data: { release }, opts: { name: 'held' } })),
    );
    await waitFor(
      async () => {
        const at = await Promise.all(jobs.map(async (j) => (await q.getJob(j.id))?.progress));
        return new Set(at.filter(Boolean).map((x) => JSON.stringify(x))).size === 2;
      },
      { timeoutMs: 20_000, what: 'two sandboxes running' },
    );
    writeFileSync(release, '');
    await waitFor(() => where.length === 8, { timeoutMs: 20_000, what: '8 jobs' });
    const sandboxes = new Set(where.map((x) => `${x.pid}/${x.threadId}`));
    expect(sandboxes.size).toBe(2);
  });
});
