/**
 * Kept completed jobs (issue 25, item 2): `keepCompleted: { count, ageMs } | false`, default the
 * newest 1 000 for a day; kept jobs keep data, name, times and result; getJobs('completed')
 * newest first; getJob state completed; trimmed by the completing calls and clean(), at the cost
 * of what they trim; caller ids; rerun and purge.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { QUEUE_DEFAULTS } from '../../../lib/index.js';
import { keysMatching } from '../../support/keys.js';
import { payloadCount } from '../../support/payloads.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/** Add `n` jobs and complete them, `batch` per call, each with result `r(i)`. */
async function run(q: ReturnType<typeof fx.queue<number, unknown>>, n: number, batch: number) {
  await q.addBulk(Array.from({ length: n }, (_, i) => ({ data: i, opts: { name: `job-${i}` } })));
  let jobs = await q.lease({ count: batch, leaseMs: 60_000 });
  while (jobs.length > 0) {
    const r = await q.completeAndLease(
      jobs.map((lease) => ({ lease, result: { double: lease.data * 2 } })),
      { count: batch, leaseMs: 60_000 },
    );
    expect(r.completed.every(Boolean)).toBe(true);
    jobs = r.jobs;
  }
}

describe('keepCompleted', () => {
  it('defaults to the newest 1 000 for a day', () => {
    const q = fx.queue();
    expect(QUEUE_DEFAULTS.keepCompleted).toEqual({ count: 1000, ageMs: 86_400_000 });
    expect(q.options.keepCompleted).toEqual({ count: 1000, ageMs: 86_400_000 });
  });

  it('keeps data, name, times and result; getJobs(completed) lists them newest first', async () => {
    const q = fx.queue<number, unknown>();
    await run(q, 5, 1);
    const listed = await q.getJobs('completed');
    expect(listed.map((j) => j.data)).toEqual([4, 3, 2, 1, 0]);
    for (const j of listed) {
      expect(j).toMatchObject({
        state: 'completed',
        name: `job-${j.data as number}`,
        result: { double: (j.data as number) * 2 },
        attemptsMade: 1,
        processedBy: '0',
      });
      expect(j.finishedAt).toBeGreaterThanOrEqual(j.startedAt!);
      expect(j.startedAt).toBeGreaterThanOrEqual(j.addedAt!);
      expect(await q.getJob(j.id)).toEqual(j);
    }
    expect((await q.getJobs('completed', { offset: 1, limit: 2 })).map((j) => j.data)).toEqual([
      3, 2,
    ]);
    expect(await q.counts()).toMatchObject({ completed: 5, pending: 0 });
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('the count bound: the complete that pushes past it trims the oldest, whatever it cost', async () => {
    const q = fx.queue<number, unknown>({ keepCompleted: { count: 3, ageMs: 60_000 } });
    await run(q, 10, 4);
    const kept = await q.getJobs('completed');
    expect(kept.map((j) => j.data)).toEqual([9, 8, 7]);
    // Nothing of the trimmed jobs is left: payloads, meta, infos of the three kept only.
    expect(await payloadCount(fx.client(), q.keys)).toBe(3);
    expect(await fx.client().hlen(q.keys.key('completedInfo'))).toBe(3);
    expect(await fx.client().hlen(q.keys.key('meta'))).toBe(3);
    expect(await q.getJob('1')).toBeNull();
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('the count bound cuts a finish time exactly: job 9 goes before job 10', async () => {
    const q = fx.queue<number, unknown>({ keepCompleted: { count: 3, ageMs: 60_000 } });
    // One call completes jobs 1–12 (one finish time: a sorted set orders them '1', '10', '11',
    // '12', '2'…), then one call jobs 13–15 (digits of one length).
    await run(q, 12, 12);
    expect((await q.getJobs('completed')).map((j) => j.id)).toEqual(['12', '11', '10']);
    await run(q, 3, 3);
    expect((await q.getJobs('completed')).map((j) => j.id)).toEqual(['15', '14', '13']);
    expect(await payloadCount(fx.client(), q.keys)).toBe(3);
    expect(await fx.client().hlen(q.keys.key('completedInfo'))).toBe(3);
    expect(await fx.client().zcard(q.keys.key('completedJobs'))).toBe(3);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('the age bound: clean() trims what aged (to 0), and reports it', async () => {
    const q = fx.queue<number, unknown>({ keepCompleted: { count: 100, ageMs: 150 } });
    await run(q, 20, 10);
    expect((await q.counts()).completed).toBe(20);
    let trimmed = 0;
    await waitFor(
      async () => {
        trimmed += (await q.clean()).completedTrimmed;
        return (await q.counts()).completed === 0;
      },
      { what: 'the kept jobs to age' },
    );
    expect(trimmed).toBe(20);
    expect(await payloadCount(fx.client(), q.keys)).toBe(0);
    const left = (await keysMatching(fx.client(), `${q.keys.base}*`)).map((k) =>
      k.slice(q.keys.base.length),
    );
    // Counters, the event log, the producer's records and the metrics: no job keys.
    expect(left.filter((k) => !/^(id|tok|es|ik:.*|mt:.*)$/.test(k))).toEqual([]);
  });

  it('keepCompleted: false removes a completed job at once (as before)', async () => {
    const q = fx.queue<number, unknown>({ keepCompleted: false });
    await run(q, 3, 3);
    expect(await q.getJobs('completed')).toEqual([]);
    expect(await q.getJob('1')).toBeNull();
    expect(await payloadCount(fx.client(), q.keys)).toBe(0);
    expect((await q.counts()).completed).toBe(0);
  });

  it('a caller id resolves to its kept job, past its dedupe window too; trimming frees it', async () => {
    const q = fx.queue<number, unknown>({
      keepCompleted: { count: 1, ageMs: 60_000 },
      dedupeWindowMs: 50,
    });
    await q.add(1, { id: 'order-1' });
    const [l] = await q.lease();
    await q.complete(l!, 'shipped');
    expect(await q.getJob('order-1')).toMatchObject({
      state: 'completed',
      data: 1,
      result: 'shipped',
    });
    expect(await q.add(2, { id: 'order-1' })).toEqual({ id: 'order-1', added: false });
    // After the window: free for adds, still naming the kept job until then.
    await waitFor(async () => (await q.clean()).callerIdsFreed === 1, { what: 'the window' });
    expect(await q.getJob('order-1')).toMatchObject({ state: 'completed', data: 1 });
    expect(await q.add(3, { id: 'order-1' })).toEqual({ id: 'order-1', added: true });
    expect(await q.getJob('order-1')).toMatchObject({ state: 'pending', data: 3 });
    const [l2] = await q.lease();
    await q.complete(l2!);
    // The second completion trimmed the first (count 1): the id names the newest.
    expect((await q.getJobs('completed')).map((j) => j.data)).toEqual([3]);
    expect(await q.getJob('order-1')).toMatchObject({ state: 'completed', data: 3 });
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('a stale lease that completes a job after it went back to the queue keeps it (and only once)', async () => {
    const q = fx.queue<number, unknown>();
    const { id } = await q.add(1);
    const [stale] = await q.lease({ leaseMs: 30 });
    await waitFor(async () => (await q.clean()).reclaimed === 1, { what: 'the lease to lapse' });
    expect(await q.getJob(id)).toMatchObject({ state: 'pending' });
    expect(await q.complete(stale!, 'late')).toBe(true);
    expect(await q.getJob(id)).toMatchObject({ state: 'completed', result: 'late' });
    expect(await q.counts()).toMatchObject({ pending: 0, completed: 1 });
    expect(await q.lease()).toEqual([]);
    expect(await q.complete(stale!)).toBe(false);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('a stale lease that completes a dead-lettered job keeps it without its dead reason', async () => {
    // (The kept job showed state 'completed' with deadReason 'lease expired 1 times'.)
    const q = fx.queue<number, unknown>({ maxLeaseExpiries: 1 });
    const { id } = await q.add(1);
    const [stale] = await q.lease({ leaseMs: 30 });
    await waitFor(async () => (await q.clean()).reclaimed === 1, { what: 'the lease to lapse' });
    await q.lease({ leaseMs: 30 });
    await waitFor(async () => (await q.clean()).deadLettered === 1, { what: 'the second to' });
    expect(await q.getJob(id)).toMatchObject({
      state: 'dead',
      deadReason: expect.stringMatching(/^lease expired/),
    });
    expect(await q.complete(stale!, 'late')).toBe(true);
    const kept = await q.getJob(id);
    expect(kept).toMatchObject({ state: 'completed', result: 'late' });
    expect(kept).not.toHaveProperty('deadReason');
    expect(await q.counts()).toMatchObject({ dead: 0, completed: 1 });
  });

  it('rerun: a new incarnation of a kept job, same caller id; purgeCompleted removes them', async () => {
    const q = fx.queue<number, unknown>();
    await q.add(5, { id: 'report', name: 'build', priority: 2 });
    const { id: plain } = await q.add(6);
    for (const l of await q.lease({ count: 2 })) await q.complete(l, 'v1');
    expect(await q.rerun('report')).toBe('report');
    // A live job holds the caller id now: no second rerun.
    await expect(q.rerun('report')).rejects.toMatchObject({ code: 'BAD_STATE' });
    const again = await q.getJob('report');
    expect(again).toMatchObject({
      state: 'pending',
      data: 5,
      name: 'build',
      priority: 2,
      attemptsMade: 0,
    });
    const rerunPlain = await q.rerun(plain);
    expect(rerunPlain).not.toBe(plain);
    expect(await q.getJob(rerunPlain!)).toMatchObject({ state: 'pending', data: 6 });
    expect(await q.rerun('nope')).toBeNull();
    // A dead-lettered job is no completed one: retryDead runs it again, and the error says so.
    const d = fx.queue<number, unknown>();
    const { id: dead } = await d.add(7, { id: 'dies' });
    await d.deadLetter((await d.lease())[0]!, 'broken');
    await expect(d.rerun(dead)).rejects.toMatchObject({
      code: 'BAD_STATE',
      message: expect.stringMatching(
        /rerun\(dies\): the job is dead-lettered, not completed \(retryDead/,
      ),
    });
    await expect(q.rerun('report')).rejects.toMatchObject({
      message: expect.stringMatching(/the id names a job that waits or runs \(a newer incarnation/),
    });
    expect(await q.purgeCompleted(plain)).toBe(1);
    expect(await q.getJob(plain)).toBeNull();
    expect(await q.purgeCompleted()).toBe(1);
    expect((await q.counts()).completed).toBe(0);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('storeResults and keepCompleted keep both: the result by id outlives the kept job', async () => {
    const q = fx.queue<number, unknown>({
      storeResults: { ttlMs: 60_000 },
      keepCompleted: { count: 1, ageMs: 60_000 },
    });
    const { id: a } = await q.add(1);
    const { id: b } = await q.add(2);
    for (const l of await q.lease({ count: 2 })) await q.complete(l, { n: l.data });
    expect(await q.getJob(b)).toMatchObject({ state: 'completed', data: 2, result: { n: 2 } });
    // a was trimmed (count 1); its result is still stored by id.
    expect(await q.getJob(a)).toEqual({ id: a, state: 'completed', result: { n: 1 } });
    expect(await q.getResult(b)).toEqual({ n: 2 });
  });

  it('100 000 completions with the defaults leave 1 000 kept jobs and the per-minute history', async () => {
    const q = fx.queue<number, unknown>({ commandTimeoutMs: 60_000 });
    const redis = fx.client();
    const n = 100_000;
    for (let i = 0; i < n; i += 10_000)
      await q.addBulk(Array.from({ length: 10_000 }, (_, k) => ({ data: i + k })));
    let jobs = await q.lease({ count: 2_000 });
    while (jobs.length > 0) {
      const r = await q.completeAndLease(
        jobs.map((lease) => ({ lease })),
        { count: 2_000 },
      );
      jobs = r.jobs;
    }
    expect((await q.counts()).completed).toBe(1_000);
    expect(await payloadCount(redis, q.keys)).toBe(1_000);
    expect(await redis.hlen(q.keys.key('completedInfo'))).toBe(1_000);
    const keys = (await keysMatching(redis, `${q.keys.base}*`)).map((k) =>
      k.slice(q.keys.base.length),
    );
    // The newest 1 000 seqs span at most 9 payload buckets (and their time buckets).
    expect(keys.filter((k) => k.startsWith('d:')).length).toBeLessThanOrEqual(9);
    expect(keys.filter((k) => k.startsWith('t:')).length).toBeLessThanOrEqual(9);
    // In bytes: the kept jobs and the history, besides the (separately capped) event log.
    let bytes = 0;
    for (const k of keys.filter((x) => x !== 'es'))
      bytes += (await redis.memory('USAGE', q.keys.base + k)) ?? 0;
    expect(bytes).toBeLessThan(400_000);
    const m = await q.getMetrics('completed');
    expect(m.total).toBe(n);
    expect(await redis.strlen(q.keys.key('metricsCompleted'))).toBe(1440 * 8);
    expect((await q.getJobs('completed', { limit: 1 }))[0]!.data).toBe(n - 1);
  }, 180_000);
});
