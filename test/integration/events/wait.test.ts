// waitForResult: resolves with the result whether the job finished before or after the call,
// rejects with the dead reason, cancellation, timeout or abort as typed errors.
import { afterAll, describe, expect, it } from '@jest/globals';
import { JobOutcomeError, type WorkQueue } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
const queues: WorkQueue<unknown, unknown>[] = [];
afterAll(async () => {
  await Promise.all(queues.map((q) => q.close()));
  await fx.cleanup();
});
const worker = workersClosedAfterEach();

function queue<T, R>(o: Parameters<QueueFixture['queue']>[0] = {}): WorkQueue<T, R> {
  const q = fx.queue<T, R>({ storeResults: { ttlMs: 60_000 }, ...o });
  queues.push(q as WorkQueue<unknown, unknown>);
  return q;
}

describe('waitForResult', () => {
  it('called before the job completes: resolves with its result', async () => {
    const q = queue<number, number>();
    const { id } = await q.add(20);
    const waiting = q.waitForResult(id, { timeoutMs: 10_000 });
    worker(q, async (job) => job.data + 1);
    await expect(waiting).resolves.toBe(21);
  });

  it('called after the job completed: resolves with the stored result', async () => {
    const q = queue<number, number>();
    const { id } = await q.add(1, { id: 'job-a' });
    const [job] = await q.lease();
    await q.complete(job!, 99);
    await expect(q.waitForResult(id, { timeoutMs: 5_000 })).resolves.toBe(99);
  });

  it('no race between the check and the listening: completions at every moment are seen', async () => {
    const q = queue<number, number>();
    const added = await q.addBulk(Array.from({ length: 40 }, (_, i) => ({ data: i })));
    const jobs = await q.lease({ count: 40 });
    const waits = added.map((a, i) => {
      const w = q.waitForResult(a.id, { timeoutMs: 10_000 });
      void q.complete(jobs[i]!, i * 2);
      return w;
    });
    expect(await Promise.all(waits)).toEqual(added.map((_, i) => i * 2));
  });

  it('without stored results, completed right after the call: undefined, never NOT_FOUND', async () => {
    const q = queue<number, number>({ storeResults: false });
    const added = await q.addBulk(Array.from({ length: 40 }, (_, i) => ({ data: i })));
    const jobs = await q.lease({ count: 40 });
    const waits = added.map((a, i) => {
      const w = q.waitForResult(a.id, { timeoutMs: 10_000 });
      void q.complete(jobs[i]!);
      return w;
    });
    expect(await Promise.all(waits)).toEqual(added.map(() => undefined));
  });

  it('without stored results nor kept jobs: resolves undefined when it completes', async () => {
    const q = queue<number, number>({ storeResults: false, keepCompleted: false });
    const { id } = await q.add(1);
    const waiting = q.waitForResult(id, { timeoutMs: 10_000 });
    const [job] = await q.lease();
    await q.complete(job!, 5);
    await expect(waiting).resolves.toBeUndefined();
  });

  it('a kept completed job (keepCompleted): resolves its result, before or after', async () => {
    const q = queue<number, number>({ storeResults: false });
    const { id } = await q.add(1);
    const waiting = q.waitForResult(id, { timeoutMs: 10_000 });
    const [job] = await q.lease();
    await q.complete(job!, 5);
    await expect(waiting).resolves.toBe(5);
    await expect(q.waitForResult(id, { timeoutMs: 10_000 })).resolves.toBe(5);
  });

  it('a job that fails for good: rejects with JOB_DEAD and the reason, before or after', async () => {
    const q = queue<number, number>({ maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0 } });
    const { id } = await q.add(1);
    const waiting = q.waitForResult(id, { timeoutMs: 10_000 });
    await q.fail((await q.lease())[0]!, new Error('first')); // retried: not an outcome
    await q.fail((await q.lease())[0]!, new Error('second'));
    const e = await waiting.catch((x: unknown) => x);
    expect(e).toBeInstanceOf(JobOutcomeError);
    expect(e).toMatchObject({ code: 'JOB_DEAD', jobId: id, reason: 'second' });
    await expect(q.waitForResult(id)).rejects.toMatchObject({ code: 'JOB_DEAD', reason: 'second' });
  });

  it('cancelled: rejects with JOB_CANCELLED', async () => {
    const q = queue();
    const { id } = await q.add(1);
    const waiting = q.waitForResult(id, { timeoutMs: 10_000 });
    await q.cancel(id);
    await expect(waiting).rejects.toMatchObject({ code: 'JOB_CANCELLED', jobId: id });
  });

  it('drained, with its delayed jobs or its group: rejects with JOB_CANCELLED (each removed job logs cancelled)', async () => {
    const q = queue<number, number>();
    const plain = await q.add(1);
    const named = await q.add(2, { id: 'drain-me' });
    const later = await q.add(3, { delayMs: 60_000 });
    const grouped = await q.add(4, { group: 'tenant-a' });
    const waits = [plain, named, later].map((a) =>
      q.waitForResult(a.id, { timeoutMs: 10_000 }).catch((e: unknown) => e),
    );
    const groupWait = q.waitForResult(grouped.id, { timeoutMs: 10_000 }).catch((e: unknown) => e);
    expect(await q.drainGroup('tenant-a')).toBe(1);
    expect(await groupWait).toMatchObject({ code: 'JOB_CANCELLED', jobId: grouped.id });
    expect(await q.drain({ delayed: true })).toBe(3);
    expect(await Promise.all(waits)).toEqual(
      [plain, named, later].map((a) =>
        expect.objectContaining({ code: 'JOB_CANCELLED', jobId: a.id }),
      ),
    );
  });

  it('timeout: TIMEOUT; abort: ABORTED (with the reason as cause); unknown job: NOT_FOUND', async () => {
    const q = queue();
    const { id } = await q.add(1);
    await expect(q.waitForResult(id, { timeoutMs: 100 })).rejects.toMatchObject({
      code: 'TIMEOUT',
    });
    const ac = new AbortController();
    const waiting = q.waitForResult(id, { timeoutMs: 10_000, signal: ac.signal });
    ac.abort('enough');
    await expect(waiting).rejects.toMatchObject({ code: 'ABORTED', cause: 'enough' });
    await expect(q.waitForResult(id, { signal: ac.signal })).rejects.toMatchObject({
      code: 'ABORTED',
    });
    await expect(q.waitForResult('nope-1', { timeoutMs: 1_000 })).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
  });

  it('refuses bad arguments, and queues without events', async () => {
    const q = queue();
    await expect(q.waitForResult('1', { timeoutMs: -1 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    });
    // Every problem at once; options that are not an object are one of them.
    await expect(q.waitForResult('', { timeoutMs: 'x' as never })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      problems: [
        'id must be a string of 1-256 characters',
        'timeoutMs must be a positive integer, got "x"',
      ],
    });
    // Longer than a Node timer waits (it would time out at once).
    await expect(q.waitForResult('1', { timeoutMs: 2 ** 31 })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      problems: [expect.stringMatching(/^timeoutMs must be at most 2147483647/)],
    });
    await expect(q.waitForResult('1', 5 as never)).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      problems: ['options must be an object { timeoutMs, signal }, got 5'],
    });
    const off = queue({ events: false });
    await expect(off.waitForResult('1')).rejects.toMatchObject({ code: 'BAD_STATE' });
  });

  it('the queue closed while it waits: rejects with CLOSED at once, not at its timeout', async () => {
    const q = queue<number, number>();
    const { id } = await q.add(1);
    const waiting = q.waitForResult(id, { timeoutMs: 60_000 });
    const settled = waiting.then(
      () => 'resolved',
      (e: unknown) => e,
    );
    expect((await q.getJob(id))?.state).toBe('pending'); // (and it waits meanwhile)
    await q.close();
    await expect(settled).resolves.toMatchObject({ code: 'CLOSED' });
    // And one called after: refused at once (a new reader would keep the process alive).
    await expect(q.waitForResult(id, { timeoutMs: 60_000 })).rejects.toMatchObject({
      code: 'CLOSED',
    });
  });
});
