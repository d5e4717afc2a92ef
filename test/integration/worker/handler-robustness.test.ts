/**
 * Worker runtime: robustness against odd handlers (non-Error throws, results that cannot be
 * stored, a handler that hangs) and listeners (throwing ones, none at all). (What a handler
 * receives and what its outcome does: handler.test.ts.)
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { WorkQueueError } from '../../../lib/index.js';
import type { Job } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { deferred, recordEvents, workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

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
      // Neither JSON nor String() can show these (String() threw: the job stayed leased, ran
      // again as after a crash and was dead-lettered for lease expiries).
      cyclic: Object.assign(Object.create(null) as Record<string, unknown>, { self: null }),
      badString: {
        toString() {
          throw new Error('no string form');
        },
        toJSON() {
          throw new Error('no JSON form');
        },
      },
    };
    (thrown.cyclic as Record<string, unknown>).self = thrown.cyclic;
    const w = worker(q, (job) => {
      throw thrown[job.data];
    });
    const events = recordEvents(w);
    for (const k of Object.keys(thrown)) await q.add(k, { id: `t-${k}` });
    await waitFor(() => events.filter(([e]) => e === 'dead').length === 8, {
      what: '8 dead events',
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
      't-cyclic': ['[object Object]', '[object Object]'],
      't-badString': ['[object Object]', '[object Object]'],
    });
    // Each failed once, on its first run (no lease expiry).
    expect((await q.getJob('t-cyclic'))!).toMatchObject({ attemptsMade: 1, leaseExpiries: 0 });
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

  it('a result that cannot be stored (BigInt, a function, a symbol): job completed, error reported, worker goes on', async () => {
    // (A function or a symbol was stored as null, as if the handler had returned nothing, with
    // no error: JSON.stringify answers undefined for them.)
    const q = fx.queue<number, unknown>({ storeResults: { ttlMs: 60_000 } });
    const bad = [{ big: 10n }, () => 1, Symbol('s')];
    const w = worker(q, (job) => (job.data < bad.length ? bad[job.data] : { n: job.data }));
    const events = recordEvents(w);
    const added: string[] = [];
    for (const data of [0, 1, 2, 3]) {
      added.push((await q.add(data)).id);
      await waitFor(() => events.filter(([e]) => e === 'completed').length === added.length, {
        what: `completion of ${data}`,
      });
    }
    const errors = events.filter(([e]) => e === 'error').map(([, e]) => e as WorkQueueError);
    expect(errors.map((e) => e.code)).toEqual(['ENCODE_FAILED', 'ENCODE_FAILED', 'ENCODE_FAILED']);
    errors.forEach((e, k) => expect(e.message).toContain(`job ${added[k]}`));
    for (const id of added.slice(0, 3)) {
      expect(await q.getJob(id)).toMatchObject({ state: 'completed', result: null });
    }
    expect(await q.getResult(added[3]!)).toEqual({ n: 3 });
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
    // The worker's 'completed' event says the same (it said undefined).
    const told = events.find(([e, job]) => e === 'completed' && (job as Job).id === a.id);
    expect(told![2]).toBeNull();
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

  it('a logger that throws, and listeners that throw values without a string form: nothing escapes, each job completes once', async () => {
    // (A `completed` listener's throw reported with String() threw again: the worker sent the
    // complete again and emitted 'completed' without end; a throwing logger crashed the process.)
    const cyclic = Object.create(null) as Record<string, unknown>;
    cyclic.self = cyclic;
    let logged = 0;
    const q = fx.queue<number>({
      logger: {
        warn: () => {
          logged++;
          throw new Error('logger down');
        },
      },
    });
    const w = worker(q, () => undefined);
    const completed: number[] = [];
    w.on('completed', (job) => {
      completed.push(job.data);
      throw cyclic;
    });
    await q.addBulk([1, 2, 3].map((data) => ({ data })));
    await waitFor(() => completed.length >= 3 && logged >= 3, { what: '3 completions logged' });
    const { id } = await q.add(4);
    await waitFor(() => completed.includes(4), { what: 'a later job' });
    expect((await q.getJob(id))!.state).toBe('completed');
    await w.close();
    expect(completed.sort()).toEqual([1, 2, 3, 4]);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0 });
  });

  it.each(['error', 'warn'] as const)(
    'with no error listener, errors go to the queue logger (its %s)',
    async (method) => {
      const logged: string[] = [];
      const log = (m: string) => void logged.push(m);
      const q = fx.queue<number, unknown>({
        storeResults: { ttlMs: 60_000 },
        // A logger may have warn alone (the option's type): errors go there then.
        logger: method === 'error' ? { warn: () => undefined, error: log } : { warn: log },
      });
      const w = worker(q, () => ({ big: 1n }));
      const done = deferred();
      w.on('completed', () => done.resolve());
      await q.add(1);
      await done.promise;
      expect(logged).toHaveLength(1);
      expect(logged[0]).toMatch(/result cannot be encoded/);
    },
  );
});
