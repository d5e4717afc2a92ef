/**
 * Worker runtime: what a handler receives, what its outcome does (complete / retry / dead),
 * which events fire with which arguments, and robustness against odd handlers and listeners.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { NonRetryableError, WorkQueueError } from '../../../lib/index.js';
import type { FailOutcome, Job } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { deferred, recordEvents, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

describe('Worker handler', () => {
  it('gets id, data, name, priority, attempt, signal, progress() and extend()', async () => {
    const q = fx.queue<{ x: number }, string>();
    const { id } = await q.add({ x: 7 }, { name: 'resize', priority: 2 });
    const seen = deferred<Job<{ x: number }>>();
    const proceed = deferred();
    const w = worker(
      q,
      async (job) => {
        seen.resolve(job);
        await proceed.promise;
        return 'ok';
      },
      { leaseMs: 5_000 },
    );
    const job = await seen.promise;
    expect(job).toMatchObject({
      id,
      data: { x: 7 },
      name: 'resize',
      priority: 2,
      attempt: 1,
      maxAttempts: 3,
      queueName: q.name,
    });
    expect(job.signal).toBeInstanceOf(AbortSignal);
    expect(job.signal.aborted).toBe(false);

    // progress(): recorded where getJob() sees it.
    expect(await job.progress({ done: 3, of: 4 })).toBe(true);
    expect(await q.getJob(id)).toMatchObject({ state: 'leased', progress: { done: 3, of: 4 } });

    // extend(): the lease deadline moves to ~now + ms (Redis time).
    const before = (await q.getJob(id))!.at!;
    expect(await job.extend(60_000)).toBe(true);
    const after = (await q.getJob(id))!.at!;
    expect(after - before).toBeGreaterThan(50_000);

    proceed.resolve();
    await waitFor(async () => (await q.getJob(id))?.state === 'completed', {
      what: 'job completed',
    });
    expect(w.activeCount).toBe(0);
  });

  it('progress() and extend() work detached from the job (destructured)', async () => {
    const q = fx.queue<number, string>();
    const { id } = await q.add(1);
    const proceed = deferred();
    const outcomes = deferred<boolean[]>();
    worker(q, async ({ progress, extend }) => {
      outcomes.resolve([await progress(0.5), await extend(60_000)]);
      await proceed.promise;
      return 'ok';
    });
    expect(await outcomes.promise).toEqual([true, true]);
    expect(await q.getJob(id)).toMatchObject({ state: 'leased', progress: 0.5 });
    proceed.resolve();
    await waitFor(async () => (await q.getJob(id))?.state === 'completed', {
      what: 'job completed',
    });
  });

  it('a returned value completes the job; the result is stored when storeResults is on', async () => {
    const q = fx.queue<number, { doubled: number }>({ storeResults: { ttlMs: 60_000 } });
    const w = worker(q, (job) => ({ doubled: job.data * 2 }));
    const events = recordEvents(w);
    const { id } = await q.add(21);
    await waitFor(() => events.some(([e]) => e === 'completed'), { what: 'completed event' });
    const [, job, result] = events.find(([e]) => e === 'completed')!;
    expect((job as Job).id).toBe(id);
    expect(result).toEqual({ doubled: 42 });
    expect(await q.getResult(id)).toEqual({ doubled: 42 });
    expect(await q.getJob(id)).toMatchObject({ state: 'completed', result: { doubled: 42 } });
    expect(events.map(([e]) => e)).toEqual(['completed']);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, delayed: 0, dead: 0 });
  });

  it('without storeResults nor keepCompleted a completed job leaves nothing behind', async () => {
    const q = fx.queue<number, number>({ keepCompleted: false });
    const w = worker(q, (job) => job.data + 1);
    const events = recordEvents(w);
    const { id } = await q.add(1);
    await waitFor(() => events.length > 0, { what: 'an event' });
    expect(events[0]!.slice(0, 1).concat(events[0]![2])).toEqual(['completed', 2]);
    expect(await q.getJob(id)).toBeNull();
    expect(await q.getResult(id)).toBeUndefined();
  });

  it('a thrown error retries after the backoff, then dead-letters; events in order', async () => {
    const q = fx.queue<string>({
      maxAttempts: 3,
      backoff: { type: 'exponential', delayMs: 150 },
    });
    const starts: Array<{ attempt: number; at: number }> = [];
    const w = worker(q, (job) => {
      starts.push({ attempt: job.attempt, at: Date.now() });
      throw new Error(`boom ${job.attempt}`);
    });
    const events = recordEvents(w);
    const { id } = await q.add('x');
    await waitFor(() => events.some(([e]) => e === 'dead'), {
      what: 'dead event',
      timeoutMs: 5_000,
    });
    expect(starts.map((s) => s.attempt)).toEqual([1, 2, 3]);
    // Exponential backoff: 150 ms after attempt 1, 300 ms after attempt 2 (Redis-timed, so
    // allow a little clock slack between Redis and this process).
    expect(starts[1]!.at - starts[0]!.at).toBeGreaterThanOrEqual(140);
    expect(starts[2]!.at - starts[1]!.at).toBeGreaterThanOrEqual(290);

    const summary = events.map(([e, job, a2, a3]) => {
      const msg = (a2 as Error | undefined)?.message;
      return [e, (job as Job).attempt, msg, a3].filter((v) => v !== undefined);
    });
    expect(summary).toEqual([
      ['failed', 1, 'boom 1', 'retried' satisfies FailOutcome],
      ['retried', 1, 'boom 1'],
      ['failed', 2, 'boom 2', 'retried'],
      ['retried', 2, 'boom 2'],
      ['failed', 3, 'boom 3', 'dead'],
      ['dead', 3, 'boom 3'],
    ]);
    expect(await q.getJob(id)).toMatchObject({
      state: 'dead',
      attemptsMade: 3,
      lastError: 'boom 3',
      deadReason: 'boom 3',
    });
  });

  it('NonRetryableError dead-letters at once', async () => {
    const q = fx.queue<string>({ maxAttempts: 5, backoff: { type: 'fixed', delayMs: 10 } });
    let runs = 0;
    const w = worker(q, () => {
      runs++;
      throw new NonRetryableError('bad input');
    });
    const events = recordEvents(w);
    const { id } = await q.add('x');
    await waitFor(() => events.some(([e]) => e === 'dead'), { what: 'dead event' });
    expect(events.map(([e, , , o]) => (o ? `${e}:${String(o)}` : e))).toEqual([
      'failed:dead',
      'dead',
    ]);
    expect(events[1]![2]).toBeInstanceOf(NonRetryableError);
    expect(runs).toBe(1);
    const [dead] = await q.listDead();
    expect(dead).toMatchObject({ id, reason: 'bad input', attemptsMade: 1 });
  });
});

describe('Worker robustness', () => {
  it('a non-Error thrown value fails the job with a readable message', async () => {
    const q = fx.queue<string>({ maxAttempts: 1 });
    const thrown: Record<string, unknown> = {
      str: 'plain string',
      obj: { code: 42, why: 'nope' },
      undef: undefined,
      nul: null,
      num: 404,
      empty: new Error(''),
    };
    const w = worker(q, (job) => {
      throw thrown[job.data];
    });
    const events = recordEvents(w);
    for (const k of Object.keys(thrown)) await q.add(k, { id: `t-${k}` });
    await waitFor(() => events.filter(([e]) => e === 'dead').length === 6, {
      what: '6 dead events',
    });
    const reasons = Object.fromEntries(
      (await q.listDead()).map((d) => [d.id, [d.lastError, d.reason]]),
    );
    expect(reasons).toEqual({
      't-str': ['plain string', 'plain string'],
      't-obj': ['{"code":42,"why":"nope"}', '{"code":42,"why":"nope"}'],
      't-undef': ['undefined', 'undefined'],
      't-nul': ['null', 'null'],
      't-num': ['404', '404'],
      't-empty': ['Error', 'Error'],
    });
    // The failed event carries exactly what was thrown.
    const failed = events.filter(([e]) => e === 'failed');
    expect(failed.map(([, job, err]) => [(job as Job<string>).data, err])).toEqual(
      expect.arrayContaining([
        ['str', 'plain string'],
        ['undef', undefined],
        ['obj', { code: 42, why: 'nope' }],
      ]),
    );
  });

  it('a result that cannot be stored (BigInt): job completed, error reported, worker goes on', async () => {
    const q = fx.queue<number, unknown>({ storeResults: { ttlMs: 60_000 } });
    const w = worker(q, (job) => (job.data === 1 ? { big: 10n } : { n: job.data }));
    const events = recordEvents(w);
    const a = await q.add(1);
    await waitFor(() => events.some(([e]) => e === 'completed'), { what: 'first completion' });
    const b = await q.add(2);
    await waitFor(() => events.filter(([e]) => e === 'completed').length === 2, {
      what: 'second completion',
    });
    const errors = events.filter(([e]) => e === 'error').map(([, e]) => e);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(WorkQueueError);
    expect(errors[0]).toMatchObject({ code: 'ENCODE_FAILED' });
    expect((errors[0] as Error).message).toContain(`job ${a.id}`);
    expect(await q.getJob(a.id)).toMatchObject({ state: 'completed', result: null });
    expect(await q.getResult(b.id)).toEqual({ n: 2 });
    expect(events.some(([e]) => e === 'failed')).toBe(false);
  });

  it('a result over maxPayloadBytes is not kept: job completed without it, PAYLOAD_TOO_LARGE reported; complete() refuses it', async () => {
    // (Results had no bound: 5 MB per kept job with a 1 000-byte payload limit.)
    const q = fx.queue<number, unknown>({
      maxPayloadBytes: 1_000,
      storeResults: { ttlMs: 60_000 },
    });
    const w = worker(q, (job) => (job.data === 1 ? 'x'.repeat(5_000) : 'small'));
    const events = recordEvents(w);
    const a = await q.add(1);
    const b = await q.add(2);
    await waitFor(() => events.filter(([e]) => e === 'completed').length === 2, {
      what: 'both completions',
    });
    await w.close();
    const errors = events.filter(([e]) => e === 'error').map(([, e]) => e);
    expect(errors).toEqual([expect.objectContaining({ code: 'PAYLOAD_TOO_LARGE' })]);
    expect((errors[0] as Error).message).toMatch(/result is 5002 bytes, over maxPayloadBytes 1000/);
    expect(await q.getJob(a.id)).toMatchObject({ state: 'completed', result: null });
    expect(await q.getResult(b.id)).toBe('small');
    // By hand: refused before anything is sent, the job still leased.
    const c = await q.add(3);
    const [lease] = await q.lease();
    await expect(q.complete(lease!, 'y'.repeat(5_000))).rejects.toMatchObject({
      code: 'PAYLOAD_TOO_LARGE',
    });
    expect((await q.getJob(c.id))!.state).toBe('leased');
    expect(await q.complete(lease!, 'fits')).toBe(true);
  });

  it('jobTimeoutMs aborts a handler that hangs past its lease and fails the job', async () => {
    const q = fx.queue<string>({ maxAttempts: 1 });
    const signals: AbortSignal[] = [];
    const w = worker(
      q,
      (job) => {
        signals.push(job.signal);
        return new Promise<never>(() => {
          /* hangs, ignores its signal */
        });
      },
      { leaseMs: 400, jobTimeoutMs: 900 },
    );
    const events = recordEvents(w);
    const t0 = Date.now();
    const { id } = await q.add('slow');
    await waitFor(() => events.some(([e]) => e === 'dead'), { what: 'dead event' });
    const elapsed = Date.now() - t0;
    expect(elapsed).toBeGreaterThanOrEqual(850);
    expect(signals).toHaveLength(1);
    expect(signals[0]!.aborted).toBe(true);
    expect(signals[0]!.reason).toBeInstanceOf(WorkQueueError);
    expect((signals[0]!.reason as Error).message).toMatch(/timed out after 900 ms/);
    expect(signals[0]!.reason).toMatchObject({ code: 'TIMEOUT' });
    expect(events[0]![2]).toMatchObject({ code: 'TIMEOUT' }); // the failed event's error
    // The lease (400 ms) was renewed meanwhile: the failure was the timeout, not a lost lease.
    expect(events.map(([e]) => e)).toEqual(['failed', 'dead']);
    expect(events[0]![3]).toBe('dead');
    expect(await q.getJob(id)).toMatchObject({
      state: 'dead',
      lastError: expect.stringMatching(/timed out/),
    });
    expect(w.activeCount).toBe(0);
  });

  it('an error listener that throws does not crash the worker', async () => {
    const q = fx.queue<number, unknown>({ storeResults: { ttlMs: 60_000 } });
    let errorCalls = 0;
    const done: string[] = [];
    // An error escaping the worker would be an unhandled rejection or uncaught exception,
    // which Jest reports as a failure of this test.
    const w = worker(q, (job) => (job.data % 2 ? { big: 1n } : job.data));
    w.on('error', () => {
      errorCalls++;
      throw new Error('listener blew up');
    });
    w.on('completed', (job) => {
      done.push(job.id);
      if (job.data === 2) throw new Error('completed listener blew up');
    });
    await q.addBulk([1, 2, 3, 4].map((data) => ({ data })));
    await waitFor(() => done.length === 4, { what: '4 completions' });
    // Still alive after all that: a later job goes through.
    const { id } = await q.add(6);
    await waitFor(() => done.includes(id), { what: 'a later job' });
    // Two unencodable results (1, 3) and one throwing `completed` listener (2).
    expect(errorCalls).toBe(3);
  });

  it('with no error listener and logger false, errors go nowhere and nothing throws', async () => {
    const q = fx.queue<number, unknown>({ storeResults: { ttlMs: 60_000 }, logger: false });
    const done: number[] = [];
    // As above: anything escaping would fail this test as an unhandled rejection.
    const w = worker(q, (job) => ({ big: BigInt(job.data) }));
    w.on('completed', (job) => {
      done.push(job.data);
      throw new Error('listener blew up');
    });
    expect(w.listenerCount('error')).toBe(0);
    await q.addBulk([1, 2, 3].map((data) => ({ data })));
    await waitFor(() => done.length === 3, { what: '3 completions' });
    expect(w.activeCount).toBe(0);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0 });
  });

  it('with no error listener, errors go to the queue logger', async () => {
    const logged: string[] = [];
    const q = fx.queue<number, unknown>({
      storeResults: { ttlMs: 60_000 },
      logger: { warn: () => undefined, error: (m) => logged.push(m) },
    });
    const w = worker(q, () => ({ big: 1n }));
    const done = deferred();
    w.on('completed', () => done.resolve());
    await q.add(1);
    await done.promise;
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/result cannot be encoded/);
  });
});
