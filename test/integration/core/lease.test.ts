import { afterAll, describe, expect, it } from '@jest/globals';
import type { LeasedJob, WorkQueue } from '../../../lib/index.js';
import { countCommands, redisNow, sameQueue } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/** Lease the only pending job with a short lease, then wait until `clean` reclaims it. */
async function leaseThenExpire<T>(q: WorkQueue<T>, leaseMs = 60): Promise<LeasedJob<T>> {
  const [stale] = await q.lease({ leaseMs });
  expect(stale).toBeDefined();
  await waitFor(async () => (await q.clean()).reclaimed === 1, {
    what: `the ${leaseMs} ms lease to expire and be reclaimed`,
  });
  return stale!;
}

describe('lease', () => {
  it('returns up to count jobs in one round trip, with distinct fresh tokens and deadline = Redis time + leaseMs', async () => {
    const client = fx.client();
    const q = fx.queue<number>({}, client);
    await q.addBulk(Array.from({ length: 7 }, (_, i) => ({ data: i })));
    await q.counts(); // start-up check done before counting
    // On a Redis that never ran the lease script, its first EVALSHA is answered NOSCRIPT and sent
    // again as EVAL (two commands): lease once from an empty queue so the count sees one.
    expect(await fx.queue<number>({}, client).lease()).toEqual([]);
    const sent = countCommands(client);
    const t0 = await redisNow(fx.client());
    const jobs = await q.lease({ count: 5, leaseMs: 4_000 });
    const t1 = await redisNow(fx.client());
    expect(sent.names).toEqual(['evalsha']);
    expect(jobs.map((j) => j.data)).toEqual([0, 1, 2, 3, 4]);
    const tokens = jobs.map((j) => j.token);
    expect(new Set(tokens).size).toBe(5);
    for (const j of jobs) {
      expect(j.deadline).toBeGreaterThanOrEqual(t0 + 4_000);
      expect(j.deadline).toBeLessThanOrEqual(t1 + 4_000);
      expect(j.attempt).toBe(1);
      expect((await q.getJob(j.id))!).toMatchObject({ state: 'leased', at: j.deadline });
    }
    // Up to count: only 2 left.
    const more = await q.lease({ count: 5, leaseMs: 4_000 });
    expect(more.map((j) => j.data)).toEqual([5, 6]);
    // Fresh: never a token seen before.
    for (const j of more) expect(tokens).not.toContain(j.token);
    expect(await q.lease({ count: 5, leaseMs: 4_000 })).toEqual([]);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 7 });
  });

  it('a re-lease of the same job gets a new token', async () => {
    const q = fx.queue<string>();
    await q.add('a');
    const [first] = await q.lease({ leaseMs: 5_000 });
    expect(await q.release(first!)).toEqual([true]);
    const [second] = await q.lease({ leaseMs: 5_000 });
    expect(second!.seq).toBe(first!.seq);
    expect(second!.token).not.toBe(first!.token);
  });

  it('skips cancelled jobs and still leases up to count live ones', async () => {
    const q = fx.queue<string>();
    await q.addBulk(['a', 'b', 'c', 'd', 'e'].map((data) => ({ data })));
    expect(await q.cancel('1')).toBe(true);
    expect(await q.cancel('2')).toBe(true);
    expect(await q.cancel('4')).toBe(true);
    const [one] = await q.lease({ count: 1, leaseMs: 5_000 });
    expect(one!.data).toBe('c');
    const rest = await q.lease({ count: 10, leaseMs: 5_000 });
    expect(rest.map((j) => j.data)).toEqual(['e']);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 2 });
  });
});

describe('complete', () => {
  it('returns true exactly once, even under 50 concurrent completers on several clients', async () => {
    const q = fx.queue<string>({ keepCompleted: false });
    const clones = Array.from({ length: 5 }, () => sameQueue(fx, q));
    await q.add('once');
    const [job] = await q.lease({ leaseMs: 10_000 });
    await Promise.all(clones.map((c) => c.counts())); // connect + start-up checks first
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => clones[i % clones.length]!.complete(job!)),
    );
    expect(results.filter((r) => r)).toHaveLength(1);
    expect(await q.getJob(job!.id)).toBeNull();
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, dead: 0 });
  });

  it('a stale lease may complete the same incarnation once; the new holder then loses it', async () => {
    const q = fx.queue<string>({ keepCompleted: false });
    await q.add('work');
    const stale = await leaseThenExpire(q);
    const [fresh] = await q.lease({ leaseMs: 10_000 });
    expect(fresh!.seq).toBe(stale.seq);
    expect(await q.complete(stale)).toBe(true);
    expect(await q.complete(stale)).toBe(false);
    expect(await q.complete(fresh!)).toBe(false);
    expect(await q.extend(fresh!, 5_000)).toEqual([false]);
    expect(await q.fail(fresh!, new Error('x'))).toBe('lost');
    expect(await q.getJob(stale.id)).toBeNull();
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, delayed: 0, dead: 0 });
  });

  it('a stale lease can never extend, fail or release under the new holder', async () => {
    const q = fx.queue<string>({ maxAttempts: 5 });
    await q.add('work');
    const stale = await leaseThenExpire(q);
    const [fresh] = await q.lease({ leaseMs: 10_000 });
    const deadline = fresh!.deadline;
    expect(await q.extend(stale, 60_000)).toEqual([false]);
    expect(await q.fail(stale, new Error('stale failure'))).toBe('lost');
    expect(await q.release(stale)).toEqual([false]);
    expect(await q.progress(stale, 0.5)).toBe(false);
    const job = await q.getJob(fresh!.id);
    expect(job).toMatchObject({ state: 'leased', at: deadline, attemptsMade: 0 });
    expect(job!.lastError).toBeUndefined();
    expect(job!.progress).toBeUndefined();
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 1, delayed: 0 });
    // The new holder still holds it.
    expect(await q.extend(fresh!, 20_000)).toEqual([true]);
    expect(await q.complete(fresh!)).toBe(true);
  });

  it('a stale lease never touches a re-added job with the same caller id', async () => {
    const q = fx.queue<string>({ dedupeWindowMs: 0 });
    await q.add('v1', { id: 'report' });
    const [old] = await q.lease({ leaseMs: 10_000 });
    expect(await q.complete(old!)).toBe(true);
    expect(await q.add('v2', { id: 'report' })).toEqual({ id: 'report', added: true });
    expect(await q.complete(old!)).toBe(false);
    expect(await q.fail(old!, new Error('x'))).toBe('lost');
    expect(await q.extend(old!, 5_000)).toEqual([false]);
    expect(await q.release(old!)).toEqual([false]);
    expect(await q.getJob('report')).toMatchObject({
      state: 'pending',
      data: 'v2',
      attemptsMade: 0,
    });
    expect(await q.counts()).toMatchObject({ pending: 1, leased: 0 });

    // Same when the old lease expired and the re-added job is leased by someone else.
    const [mid] = await q.lease({ leaseMs: 60 });
    await waitFor(async () => (await q.clean()).reclaimed === 1, { what: 'reclaim' });
    const [holder] = await q.lease({ leaseMs: 10_000 });
    expect(await q.complete(holder!)).toBe(true);
    await q.add('v3', { id: 'report' });
    const [current] = await q.lease({ leaseMs: 10_000 });
    expect(await q.complete(mid!)).toBe(false);
    expect(await q.complete(old!)).toBe(false);
    expect(await q.getJob('report')).toMatchObject({ state: 'leased', data: 'v3' });
    expect(await q.complete(current!)).toBe(true);
  });
});

describe('release', () => {
  it('returns the job to the FRONT without counting an attempt', async () => {
    const q = fx.queue<string>();
    await q.addBulk(['a', 'b', 'c'].map((data) => ({ data })));
    const [a, b] = await q.lease({ count: 2, leaseMs: 10_000 });
    expect(b!.data).toBe('b');
    expect(await q.release(b!)).toEqual([true]);
    expect(await q.getJob(b!.id)).toMatchObject({ state: 'pending', attemptsMade: 0 });
    // b is leased before c, which has been waiting longer.
    const [next] = await q.lease({ leaseMs: 10_000 });
    expect(next).toMatchObject({ data: 'b', attempt: 1 });
    // Several at once keep their order at the front.
    expect(await q.release([a!, next!])).toEqual([true, true]);
    const all = await q.lease({ count: 10, leaseMs: 10_000 });
    expect(all.map((j) => [j.data, j.attempt])).toEqual([
      ['a', 1],
      ['b', 1],
      ['c', 1],
    ]);
    // A second release of the same lease is refused.
    expect(await q.release(a!)).toEqual([false]);
  });
});

describe('extend', () => {
  it('pushes the deadline (Redis time) and returns true while the lease is held', async () => {
    const q = fx.queue<string>();
    const c = fx.client();
    await q.add('a');
    const [job] = await q.lease({ leaseMs: 1_000 });
    const before = job!.deadline;
    const t0 = await redisNow(c);
    expect(await q.extend(job!, 20_000)).toEqual([true]);
    const t1 = await redisNow(c);
    expect(job!.deadline).toBeGreaterThan(before);
    expect(job!.deadline).toBeGreaterThanOrEqual(t0 + 20_000);
    expect(job!.deadline).toBeLessThanOrEqual(t1 + 20_000);
    expect((await q.getJob(job!.id))!.at).toBe(job!.deadline);
  });

  it('returns false after the lease expired and was reclaimed', async () => {
    const q = fx.queue<string>();
    await q.add('a');
    const stale = await leaseThenExpire(q);
    const deadline = stale.deadline;
    expect(await q.extend(stale, 20_000)).toEqual([false]);
    expect(stale.deadline).toBe(deadline);
    expect((await q.getJob(stale.id))!.state).toBe('pending');
  });

  it("a worker's renewal never moves a deadline earlier; an explicit extend sets it", async () => {
    const q = fx.queue<string>();
    await q.add('a');
    const [job] = await q.lease({ leaseMs: 1_000 });
    expect(await q.extend(job!, 60_000)).toEqual([true]);
    const extended = job!.deadline;
    // The renewal a worker sends every third of its lease: a handler's longer extend stays.
    expect(await q.renew([job!], 1_000, new Map())).toEqual([true]);
    expect(job!.deadline).toBe(extended);
    expect((await q.getJob(job!.id))!.at).toBe(extended);
    // An explicit extend is what it says: now + ms, shorter too.
    expect(await q.extend(job!, 2_000)).toEqual([true]);
    expect(job!.deadline).toBeLessThan(extended - 50_000);
    expect((await q.getJob(job!.id))!.at).toBe(job!.deadline);
  });

  it('returns false after the job was cancelled', async () => {
    const q = fx.queue<string>();
    await q.add('a');
    const [job] = await q.lease({ leaseMs: 10_000 });
    expect(await q.cancel(job!.id)).toBe(true);
    expect(await q.extend(job!, 20_000)).toEqual([false]);
    expect(await q.complete(job!)).toBe(false);
    expect(await q.counts()).toMatchObject({ leased: 0, pending: 0 });
  });
});
