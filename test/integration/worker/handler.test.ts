/**
 * Worker runtime: what a handler receives, what its outcome does (complete / retry / dead) and
 * which events fire with which arguments. (Odd handlers and listeners:
 * handler-robustness.test.ts.)
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { NonRetryableError } from '../../../lib/index.js';
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
