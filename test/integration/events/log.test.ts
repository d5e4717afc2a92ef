// The event log: each kind is logged by the script that makes its change, exactly then (not when
// a script refuses), with the caller id; `events: false` writes nothing; the cap holds.
import { afterAll, describe, expect, it } from '@jest/globals';
import { Worker, type QueueEvent, type WorkQueue } from '../../../lib/index.js';
import { parseEntry } from '../../../lib/events/parse.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { waitParked } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/** Every event in the queue's log, in order. */
async function log(q: WorkQueue<unknown, unknown>): Promise<QueueEvent[]> {
  const entries = await fx.client().xrange(q.keys.eventLog, '-', '+');
  return entries.flatMap(([id, fields]) => parseEntry(id, fields));
}
/** The log as 'kind id' lines. */
async function lines(q: WorkQueue<unknown, unknown>): Promise<string[]> {
  return (await log(q)).map((e) => `${e.kind} ${e.id}`);
}

describe('event log', () => {
  it('add, lease, progress, complete: one event each, in order', async () => {
    const q = fx.queue();
    const { id } = await q.add({ a: 1 });
    const [job] = await q.lease({ leaseMs: 10_000 });
    expect(await q.progress(job!, 0.5)).toBe(true);
    expect(await q.complete(job!)).toBe(true);
    const events = await log(q);
    expect(events.map((e) => `${e.kind} ${e.id}`)).toEqual([
      `added ${id}`,
      `active ${id}`,
      `progress ${id}`,
      `completed ${id}`,
    ]);
    expect(events[2]).toMatchObject({ progress: 0.5 });
    // Kept (keepCompleted): its result (none here) is read with getJob.
    expect(events[3]).toMatchObject({ resultStored: true });
    expect('result' in events[3]!).toBe(false);
    // Completing again (the job is gone) changes nothing and logs nothing.
    expect(await q.complete(job!)).toBe(false);
    expect(await q.progress(job!, 1)).toBe(false);
    expect(await lines(q)).toHaveLength(4);
  });

  it('events name jobs by their caller id; a deduplicated add logs nothing', async () => {
    const q = fx.queue({ storeResults: { ttlMs: 60_000 } });
    await q.add('x', { id: 'order-1' });
    expect((await q.add('x', { id: 'order-1' })).added).toBe(false);
    const [job] = await q.lease();
    await q.complete(job!, 'ok');
    const events = await log(q);
    expect(events.map((e) => `${e.kind} ${e.id}`)).toEqual([
      'added order-1',
      'active order-1',
      'completed order-1',
    ]);
    expect(events[2]).toMatchObject({ resultStored: true });
  });

  it('a batch: one entry per call, one event per job', async () => {
    const q = fx.queue();
    const added = await q.addBulk([{ data: 1 }, { data: 2 }, { data: 3 }]);
    const jobs = await q.lease({ count: 3 });
    const ids = added.map((a) => a.id);
    expect(await lines(q)).toEqual([
      ...ids.map((i) => `added ${i}`),
      ...ids.map((i) => `active ${i}`),
    ]);
    expect(await fx.client().xlen(q.keys.eventLog)).toBe(2);
    await q.completeAndLease(jobs.map((lease) => ({ lease })));
    expect((await lines(q)).slice(6)).toEqual(ids.map((i) => `completed ${i}`));
  });

  it('complete + lease in one call: one entry, completed then active, fields per kind', async () => {
    const q = fx.queue({ storeResults: { ttlMs: 60_000 } });
    const added = await q.addBulk([1, 2, 3, 4].map((data) => ({ data })));
    const wid = await q.registerWorker();
    const first = await q.lease({ count: 2, workerId: wid });
    const before = await fx.client().xlen(q.keys.eventLog);
    const r = await q.completeAndLease(
      first.map((lease) => ({ lease, result: 'ok' })),
      { count: 2, workerId: wid },
    );
    expect(r.jobs).toHaveLength(2);
    expect(await fx.client().xlen(q.keys.eventLog)).toBe(before + 1);
    const events = (await log(q)).slice(-4);
    const ids = added.map((a) => a.id);
    expect(events.map((e) => `${e.kind} ${e.id}`)).toEqual([
      `completed ${ids[0]}`,
      `completed ${ids[1]}`,
      `active ${ids[2]}`,
      `active ${ids[3]}`,
    ]);
    expect(events[0]).toMatchObject({ resultStored: true });
    expect(events[2]).toMatchObject({ workerId: wid });
    // The events of one entry share its stream id.
    expect(new Set(events.map((e) => e.eventId)).size).toBe(1);
  });

  it('caller ids with spaces keep their place among plain ids; a huge call splits its entry', async () => {
    const q = fx.queue();
    const specs = Array.from({ length: 700 }, (_, i) =>
      i % 2 === 0 ? { data: i, opts: { id: `order ${i}` } } : { data: i },
    );
    const added = await q.addBulk(specs);
    const wid = await q.registerWorker();
    const jobs = await q.lease({ count: 700, workerId: wid });
    expect(jobs).toHaveLength(700);
    const active = (await log(q)).filter((e) => e.kind === 'active');
    expect(active.map((e) => e.id)).toEqual(jobs.map((j) => j.id));
    expect(new Set(jobs.map((j) => j.id))).toEqual(new Set(added.map((a) => a.id)));
    await q.completeAndLease(jobs.map((lease) => ({ lease })));
    const completed = (await log(q)).filter((e) => e.kind === 'completed');
    expect(completed.map((e) => e.id)).toEqual(jobs.map((j) => j.id));
    // 700 jobs, 350 with spaced ids: more fields than one entry takes, so more than one entry.
    expect(new Set(completed.map((e) => e.eventId)).size).toBeGreaterThan(1);
  });

  it('fail: retried, then dead with its reason; a stale fail is refused and logs nothing', async () => {
    const q = fx.queue({ maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0 } });
    const { id } = await q.add('x');
    const [a] = await q.lease();
    expect(await q.fail(a!, new Error('boom 1'))).toBe('retried');
    expect(await q.fail(a!, new Error('stale'))).toBe('lost');
    const [b] = await q.lease();
    expect(await q.fail(b!, new Error('boom 2'))).toBe('dead');
    const events = (await log(q)).filter((e) => e.kind === 'failed' || e.kind === 'dead');
    expect(events).toEqual([
      expect.objectContaining({ kind: 'failed', id, attempt: 1, retried: true, error: 'boom 1' }),
      expect.objectContaining({ kind: 'failed', id, attempt: 2, retried: false, error: 'boom 2' }),
      expect.objectContaining({ kind: 'dead', id, reason: 'boom 2' }),
    ]);
    // Its `at` is the job's finishedAt, written by the script ('T'): the entry id's ms, Redis'
    // clock when the entry was appended, could be a ms later (1 in ~12 dead events).
    const dead = (await fx.client().xrange(q.keys.eventLog, '-', '+')).at(-1)![1];
    const finishedAt = (await q.getJob(id))!.finishedAt!;
    expect(dead[dead.indexOf('T') + 1]).toBe(String(finishedAt));
    expect(events[2]!.at).toBe(finishedAt);
  });

  it('an error over 500 bytes: its first 500, never half a UTF-8 character', async () => {
    const q = fx.queue({ maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0 } });
    const { id } = await q.add('x');
    const accents = 'a' + 'é'.repeat(600); // byte 501 is the second of an 'é'
    const emoji = '😀'.repeat(300); // 4 bytes each: 125 fit exactly
    const [a] = await q.lease();
    expect(await q.fail(a!, new Error(accents))).toBe('retried');
    const [b] = await q.lease();
    expect(await q.fail(b!, new Error(emoji))).toBe('retried');
    const [c] = await q.lease();
    expect(await q.fail(c!, new Error('b'.repeat(499) + '€'))).toBe('dead');
    const events = (await log(q)).filter((e) => e.kind === 'failed' || e.kind === 'dead');
    expect(events).toEqual([
      expect.objectContaining({ kind: 'failed', id, error: 'a' + 'é'.repeat(249) }),
      expect.objectContaining({ kind: 'failed', id, error: '😀'.repeat(125) }),
      expect.objectContaining({ kind: 'failed', id, error: 'b'.repeat(499) }),
      expect.objectContaining({ kind: 'dead', id, reason: 'b'.repeat(499) }),
    ]);
    // The job keeps its whole last error.
    expect((await q.getJob(id))!.lastError).toBe('b'.repeat(499) + '€');
  });

  it('cancel: cancelled, and the holder’s complete is refused (no completed event)', async () => {
    const q = fx.queue();
    const { id } = await q.add('x');
    const [job] = await q.lease({ leaseMs: 10_000 });
    expect(await q.cancel(id)).toBe(true);
    expect(await q.cancel(id)).toBe(false);
    expect(await q.complete(job!)).toBe(false);
    expect(await lines(q)).toEqual([`added ${id}`, `active ${id}`, `cancelled ${id}`]);
  });

  it('release: released; an expired lease: reclaimed by clean', async () => {
    const q = fx.queue();
    const { id } = await q.add('x');
    const [a] = await q.lease({ leaseMs: 10_000 });
    expect(await q.release(a!)).toEqual([true]);
    await q.lease({ leaseMs: 1 });
    await waitFor(async () => (await q.clean()).reclaimed === 1, { what: 'lease expiry' });
    const events = await log(q);
    expect(events.map((e) => `${e.kind} ${e.id}`)).toEqual([
      `added ${id}`,
      `active ${id}`,
      `released ${id}`,
      `active ${id}`,
      `reclaimed ${id}`,
    ]);
    expect(events[4]).toMatchObject({ reason: 'lease expired' });
  });

  it("a dead worker's jobs: reclaimed, reason 'worker died'", async () => {
    const q = fx.queue({ heartbeatTimeoutMs: 300 });
    const added = await q.addBulk([{ data: 1 }, { data: 2 }]);
    const wid = await q.registerWorker();
    await q.lease({ count: 2, leaseMs: 600_000, workerId: wid });
    await waitFor(async () => (await q.clean()).deadWorkers > 0, { what: 'the dead worker' });
    const reclaimed = (await log(q)).filter((e) => e.kind === 'reclaimed');
    expect(reclaimed.map((e) => e.id).sort()).toEqual(added.map((a) => a.id).sort());
    for (const e of reclaimed) expect(e).toMatchObject({ reason: 'worker died' });
  });

  it('delayed, then promoted when due', async () => {
    const q = fx.queue();
    const { id } = await q.add('x', { delayMs: 50 });
    expect(await lines(q)).toEqual([`added ${id}`, `delayed ${id}`]);
    await waitFor(async () => (await q.lease()).length === 1, { what: 'the delayed job' });
    expect(await lines(q)).toEqual([
      `added ${id}`,
      `delayed ${id}`,
      `promoted ${id}`,
      `active ${id}`,
    ]);
  });

  it('promote(id): promoted, as when due (grouped: with its group)', async () => {
    const q = fx.queue();
    const { id } = await q.add('x', { delayMs: 60_000 });
    const { id: g } = await q.add('y', { delayMs: 60_000, id: 'cid', group: 'G' });
    expect(await q.promote(id)).toBe(true);
    expect(await q.promote(g)).toBe(true);
    expect(await q.promote(id)).toBe(false); // not delayed any more: nothing logged
    const promoted = (await log(q)).filter((e) => e.kind === 'promoted');
    expect(promoted.map((e) => [e.id, e.group])).toEqual([
      [id, undefined],
      ['cid', 'G'],
    ]);
  });

  it('a hand-off to a parked worker: active when the worker adopts it, with its worker id', async () => {
    const q = fx.queue();
    const done: string[] = [];
    const w = new Worker(q, async (job) => {
      done.push(job.id);
      await job.progress('half');
      return 1;
    });
    try {
      await w.start();
      await waitParked(fx.client(), q, w.workerId);
      const { id } = await q.add('x');
      await waitFor(async () => (await lines(q)).includes(`completed ${id}`), {
        what: 'completed',
      });
      const events = await log(q);
      expect(events.map((e) => `${e.kind} ${e.id}`)).toEqual([
        `added ${id}`,
        `active ${id}`,
        `progress ${id}`,
        `completed ${id}`,
      ]);
      // Its 'active' has the job's added time, as a leased job's does (a hand-off starts at its add).
      const added = (await q.getJob(id))!.addedAt;
      expect(events[1]).toMatchObject({ workerId: w.workerId, addedAt: added });
      expect(events[3]).toMatchObject({ addedAt: added, startedAt: added });
    } finally {
      await w.close({ timeoutMs: 0 });
    }
  });

  it('events: false writes no stream at all', async () => {
    const q = fx.queue({ events: false, maxAttempts: 1 });
    await q.add('a');
    await q.add('b', { delayMs: 1 });
    const [job] = await q.lease();
    await q.progress(job!, 1);
    await q.complete(job!);
    const [b] = await waitFor(async () => {
      const got = await q.lease();
      return got.length ? got : undefined;
    });
    await q.fail(b!, new Error('x'));
    expect(await fx.client().exists(q.keys.eventLog)).toBe(0);
  });

  it('the cap holds (approximately: whole stream nodes are trimmed)', async () => {
    const q = fx.queue({ events: { maxLen: 100 } });
    // One entry per add script: awaited one by one (concurrent adds would share scripts).
    for (let i = 0; i < 300; i++) await q.add(i);
    const len = await fx.client().xlen(q.keys.eventLog);
    expect(len).toBeGreaterThanOrEqual(100);
    expect(len).toBeLessThanOrEqual(200);
  });

  it('refuses a bad events option, listing it', () => {
    expect(() => fx.queue({ events: { maxLen: 0 } })).toThrow(/events must be false or/);
  });
});
