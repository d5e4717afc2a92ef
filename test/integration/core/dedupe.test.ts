// add's dedupe windows: throttle (`dedupe: { ttlMs }`) and debounce (`replace: true`), with
// clean(), getJob, repair and bad input.
import { afterAll, describe, expect, it } from '@jest/globals';
import { WorkQueue } from '../../../lib/index.js';
import { errorOf } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

async function runOne<T>(q: WorkQueue<T>): Promise<T> {
  const [l] = await q.lease({ leaseMs: 5_000 });
  expect(await q.complete(l!)).toBe(true);
  return l!.data;
}

describe('dedupe: throttle', () => {
  it('ignores adds of the id for ttlMs from the first add, even after completion; clean() frees it', async () => {
    // Completed jobs not kept: only the window holds the id (kept ones: history/kept.test.ts).
    const q = fx.queue<number>({ dedupeWindowMs: 0, keepCompleted: false });
    expect(await q.add(1, { id: 't', dedupe: { ttlMs: 400 } })).toEqual({ id: 't', added: true });
    expect(await q.add(2, { id: 't', dedupe: { ttlMs: 400 } })).toEqual({ id: 't', added: false });
    expect(await runOne(q)).toBe(1);
    // Completed, dedupeWindowMs 0, yet still taken: the window counts from the first add.
    expect(await q.add(3, { id: 't' })).toEqual({ id: 't', added: false });
    expect(await q.getJob('t')).toEqual({ id: 't', state: 'completed' });
    expect(await q.counts()).toMatchObject({ pending: 0, delayed: 0, leased: 0 });
    const report = await waitFor(
      async () => {
        const r = await q.clean();
        return r.callerIdsFreed > 0 ? r : null;
      },
      { what: 'clean to free the window' },
    );
    expect(report.callerIdsFreed).toBe(1);
    expect(await q.getJob('t')).toBeNull();
    expect(await q.add(4, { id: 't', dedupe: { ttlMs: 400 } })).toEqual({ id: 't', added: true });
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('a job that outlives its window keeps its id until it completes, then dedupeWindowMs applies', async () => {
    const q = fx.queue<number>({ dedupeWindowMs: 60_000, keepCompleted: false });
    await q.add(1, { id: 'long', dedupe: { ttlMs: 1 } });
    await waitFor(async () => (await q.clean()).callerIdsFreed === 0, { what: 'a clean' });
    // The window's entry is gone, the job still holds the id.
    expect(await q.add(2, { id: 'long' })).toEqual({ id: 'long', added: false });
    expect(await runOne(q)).toBe(1);
    expect(await q.add(3, { id: 'long' })).toEqual({ id: 'long', added: false });
    expect(await q.getJob('long')).toEqual({ id: 'long', state: 'completed' });
  });

  it('cancel frees the id at once, as for any caller id', async () => {
    const q = fx.queue<number>();
    await q.add(1, { id: 'c', dedupe: { ttlMs: 60_000 } });
    expect(await q.cancel('c')).toBe(true);
    expect(await q.add(2, { id: 'c' })).toEqual({ id: 'c', added: true });
    expect(await runOne(q)).toBe(2);
  });
});

describe('dedupe: replace (debounce)', () => {
  it('replaces a delayed job: payload, options, delay restarted; repair finds nothing', async () => {
    const q = fx.queue<{ v: number }>({ dedupeWindowMs: 0 });
    const d = { ttlMs: 60_000, replace: true };
    await q.add({ v: 1 }, { id: 'doc', name: 'a', delayMs: 60_000, maxAttempts: 2, dedupe: d });
    const before = await q.getJob('doc');
    const r = await q.add(
      { v: 2 },
      { id: 'doc', name: 'b', priority: 1, delayMs: 120_000, dedupe: d },
    );
    expect(r).toEqual({ id: 'doc', added: false, replaced: true });
    const job = await q.getJob('doc');
    expect(job).toMatchObject({ state: 'delayed', data: { v: 2 }, name: 'b', priority: 1 });
    expect(job!.at!).toBeGreaterThan(before!.at! + 30_000);
    expect(await q.counts()).toMatchObject({ delayed: 1, pending: 0 });
    // Replaced again with no delay: due now.
    await q.add({ v: 3 }, { id: 'doc', dedupe: d });
    expect(await q.counts()).toMatchObject({ delayed: 0, pending: 1 });
    const repaired = await q.repair();
    expect(repaired.fixes).toEqual([]);
    const leased = await q.lease({ count: 10, leaseMs: 5_000 });
    expect(leased.map((l) => [l.id, l.data, l.name, l.maxAttempts])).toEqual([
      ['doc', { v: 3 }, undefined, q.options.maxAttempts],
    ]);
  });

  it('replaces a pending job (a tombstone stays behind, skipped by lease); not a leased one', async () => {
    const q = fx.queue<number>({ dedupeWindowMs: 0 });
    const d = { ttlMs: 200, replace: true };
    await q.add(1, { id: 'p', dedupe: d });
    await q.add(9, { id: 'other' });
    expect(await q.add(2, { id: 'p', dedupe: d })).toEqual({
      id: 'p',
      added: false,
      replaced: true,
    });
    const report = await q.repair();
    expect(report.fixes).toEqual([]);
    expect(report.tombstones).toBe(1);
    const [first] = await q.lease({ leaseMs: 5_000 });
    expect(first).toMatchObject({ id: 'other', data: 9 });
    const [held] = await q.lease({ leaseMs: 5_000 });
    expect(held).toMatchObject({ id: 'p', data: 2 });
    // Running: the add is ignored, the running job untouched.
    expect(await q.add(3, { id: 'p', dedupe: d })).toEqual({ id: 'p', added: false });
    expect((await q.getJob('p'))!.data).toBe(2);
    expect(await q.complete(held!)).toBe(true);
    // Completed within the window: ignored too; after it, added.
    await waitFor(async () => (await q.add(4, { id: 'p', dedupe: d })).added, {
      what: 'the window to end',
    });
    expect(await q.lease({ count: 5, leaseMs: 5_000 })).toMatchObject([{ id: 'p', data: 4 }]);
  });

  it('adds of one id in one batch: the last payload wins; the plain add after it is ignored', async () => {
    const q = fx.queue<number>();
    const d = { ttlMs: 60_000, replace: true };
    const res = await q.addBulk([
      { data: 1, opts: { id: 'b', dedupe: d } },
      { data: 2, opts: { id: 'b', dedupe: d } },
      { data: 3, opts: { id: 'b', dedupe: d, delayMs: 50 } },
      { data: 4, opts: { id: 'b' } },
    ]);
    expect(res).toEqual([
      { id: 'b', added: true },
      { id: 'b', added: false, replaced: true },
      { id: 'b', added: false, replaced: true },
      { id: 'b', added: false },
    ]);
    expect(await q.getJob('b')).toMatchObject({ state: 'delayed', data: 3 });
    expect((await q.repair()).fixes).toEqual([]);
  });
});

describe('dedupe: bad input', () => {
  it('lists every problem at once and writes nothing', async () => {
    const q = fx.queue<number>();
    const err = (await errorOf(
      q.addBulk([
        { data: 1, opts: { dedupe: { ttlMs: 0 } } },
        {
          data: 2,
          opts: { id: 'x', dedupe: { ttlMs: 1.5, replace: 'yes' as unknown as boolean } },
        },
        { data: 3, opts: { id: 'y', dedupe: { ttlMs: 10, extend: true } as never } },
      ]),
    )) as { code: string; problems: string[] };
    expect(err.code).toBe('INVALID_ARGUMENT');
    expect(err.problems).toEqual([
      'job 0: dedupe needs a caller id (`id`)',
      'job 0: dedupe.ttlMs must be an integer 1..90000000000000 (ms), got 0',
      'job 1: dedupe.ttlMs must be an integer 1..90000000000000 (ms), got 1.5',
      'job 1: dedupe.replace must be a boolean, got "yes"',
      'job 2: dedupe: unknown option "extend"; known: ttlMs, replace',
    ]);
    expect(await q.counts()).toMatchObject({ pending: 0, delayed: 0 });
  });
});
