/**
 * Groups (issue 27), the lease scripts seen through lease(): round robin across groups, priorities
 * within and across groups, ungrouped jobs as one more member of the round, per-group
 * concurrency and rate limits, pause, the state that lets counts() and getGroups() stay cheap.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import type { LeasedJob, WorkQueue } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

type Data = { g?: string; i: number };
const take = async (q: WorkQueue<Data>, count: number) =>
  (await q.lease({ count, leaseMs: 60_000 })).map((j) => `${j.group ?? '-'}${j.data.i}`);
const bulk = (group: string | undefined, n: number, from = 0, priority?: number) =>
  Array.from({ length: n }, (_, k) => ({
    data: { g: group, i: from + k },
    opts: {
      ...(group === undefined ? {} : { group }),
      ...(priority === undefined ? {} : { priority }),
    },
  }));

describe('round robin across groups', () => {
  it("one job per group per turn: a backlog of A does not hold B's jobs behind it", async () => {
    const q = fx.queue<Data>();
    await q.addBulk(bulk('A', 100));
    await q.addBulk(bulk('B', 3));
    await q.addBulk(bulk('C', 2));
    expect(await take(q, 9)).toEqual(['A0', 'B0', 'C0', 'A1', 'B1', 'C1', 'A2', 'B2', 'A3']);
    // B and C are done: A alone, in order.
    expect(await take(q, 3)).toEqual(['A4', 'A5', 'A6']);
  });

  it('a group that starts waiting joins the back of the round', async () => {
    const q = fx.queue<Data>();
    await q.addBulk([...bulk('A', 5), ...bulk('B', 5)]);
    expect(await take(q, 3)).toEqual(['A0', 'B0', 'A1']);
    await q.addBulk(bulk('C', 2));
    expect(await take(q, 5)).toEqual(['B1', 'A2', 'C0', 'B2', 'A3']);
  });

  it('ungrouped jobs take part as one more member while any group waits, and alone as before', async () => {
    const q = fx.queue<Data>();
    await q.addBulk(bulk(undefined, 4));
    await q.addBulk(bulk('A', 4));
    expect(await take(q, 6)).toEqual(['A0', '-0', 'A1', '-1', 'A2', '-2']);
    expect(await take(q, 4)).toEqual(['A3', '-3']);
    await q.addBulk(bulk(undefined, 3, 10));
    expect(await take(q, 5)).toEqual(['-10', '-11', '-12']);
  });

  it('priorities: first within a group; across groups a higher-priority head goes first', async () => {
    const q = fx.queue<Data>();
    await q.addBulk([...bulk('A', 3), ...bulk('A', 1, 10, 1)]);
    await q.addBulk(bulk('B', 2));
    // A's priority-1 job heads A, so A goes before B (priority 5); then A has had its turn:
    // round robin at 5, B first.
    expect(await take(q, 5)).toEqual(['A10', 'B0', 'A0', 'B1', 'A1']);
    await q.addBulk(bulk('C', 1, 0, 0));
    expect(await take(q, 2)).toEqual(['C0', 'A2']);
  });

  it('counts() includes grouped jobs; getJobs lists them per group; getJob shows the group', async () => {
    const q = fx.queue<Data>();
    await q.addBulk([...bulk(undefined, 2), ...bulk('A', 3), ...bulk('B', 1, 0, 2)]);
    const c = await q.counts();
    expect(c.pending).toBe(6);
    expect(c.pendingByPriority[2]).toBe(1);
    expect(c.pendingByPriority[5]).toBe(5);
    const page = await q.getJobs('pending', { offset: 1, limit: 4 });
    expect(page.map((j) => `${j.group ?? '-'}${j.data!.i}`)).toEqual(['-1', 'A0', 'A1', 'A2']);
    const a = await q.getJobs('pending', { group: 'A', offset: 1 });
    expect(a.map((j) => j.data!.i)).toEqual([1, 2]);
    expect(await q.getJob(page[1]!.id)).toMatchObject({ state: 'pending', group: 'A' });
    await take(q, 6);
    expect((await q.counts()).pending).toBe(0);
    expect(await q.getGroups()).toEqual([
      { group: 'A', pending: 0, running: 3, paused: false, limited: false },
      { group: 'B', pending: 0, running: 1, paused: false, limited: false },
    ]);
  });
});

describe('per-group limits', () => {
  it('concurrency 1: the next job of a group starts only after the previous one ended', async () => {
    const q = fx.queue<Data>({ groups: { concurrency: 1 } });
    await q.addBulk([...bulk('A', 3), ...bulk('B', 2)]);
    const first = await q.lease({ count: 10, leaseMs: 60_000 });
    expect(first.map((j) => `${j.group}${j.data.i}`)).toEqual(['A0', 'B0']);
    expect(await take(q, 10)).toEqual([]);
    await q.complete(first[0]!);
    expect(await take(q, 10)).toEqual(['A1']);
    await q.release(first[1]!);
    // Released: back in front of its group, before B1.
    expect(await take(q, 10)).toEqual(['B0']);
  });

  it('setGroupConcurrency overrides one group; null goes back to the default', async () => {
    const q = fx.queue<Data>({ groups: { concurrency: 1 } });
    await q.setGroupConcurrency('A', 3);
    await q.addBulk([...bulk('A', 5), ...bulk('B', 5)]);
    expect((await take(q, 10)).sort()).toEqual(['A0', 'A1', 'A2', 'B0']);
    await q.setGroupConcurrency('A', null);
    const q2 = fx.queue<Data>();
    await q2.setGroupConcurrency('A', 2);
    await q2.addBulk([...bulk('A', 5), ...bulk('B', 3)]);
    expect(await take(q2, 10)).toEqual(['A0', 'B0', 'A1', 'B1', 'B2']);
  });

  it('rate limit per group: other groups go on; the lease says when to look again', async () => {
    const q = fx.queue<Data>({ groups: { limiter: { max: 2, durationMs: 60_000 } } });
    await q.addBulk([...bulk('A', 5), ...bulk('B', 1)]);
    const batch = await q.leaseBatch({ count: 10, leaseMs: 60_000 });
    expect(batch.jobs.map((j) => `${j.group}${j.data.i}`)).toEqual(['A0', 'B0', 'A1']);
    // A waits for its window: the reply names when A may start its next job.
    expect(batch.nextDue).toBe(batch.now + 60_000);
    expect(await q.getGroups()).toEqual([
      { group: 'A', pending: 3, running: 2, paused: false, limited: true },
      { group: 'B', pending: 0, running: 1, paused: false, limited: false },
    ]);
    await q.addBulk(bulk('C', 2));
    expect(await take(q, 10)).toEqual(['C0', 'C1']);
  });

  it('a group left empty is forgotten at its next turn when nothing of it runs, else when its last run ends', async () => {
    const q = fx.queue<Data>();
    const names = async () =>
      (await q.getGroups()).map((g) => `${g.group}:${g.pending}/${g.running}`);
    await q.addBulk([...bulk('A', 1), ...bulk('B', 3), ...bulk('C', 1)]);
    const first = await q.lease({ count: 3, leaseMs: 60_000 });
    expect(first.map((j) => `${j.group}${j.data.i}`)).toEqual(['A0', 'B0', 'C0']);
    // C's run ends while C waits empty in the round: still listed until its turn.
    expect(await q.complete(first[2]!)).toBe(true);
    // The next rounds meet A, C and at last B empty: C (nothing running) goes; A and B (running)
    // stay listed.
    expect(await take(q, 10)).toEqual(['B1', 'B2']);
    expect(await names()).toEqual(['A:0/1', 'B:0/3']);
    expect(await q.complete(first[0]!)).toBe(true);
    expect(await names()).toEqual(['B:0/3']);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it("the running counts' hash stays a hash table (its pad field ''), not listed as a group", async () => {
    const q = fx.queue<Data>();
    await q.addBulk(bulk('A', 2));
    expect(await take(q, 1)).toEqual(['A0']);
    const r = q.client as Redis;
    expect(await r.object('ENCODING', q.keys.key('groupRunning'))).toBe('hashtable');
    expect(await r.hget(q.keys.key('groupRunning'), 'A')).toBe('1');
    expect(await q.getGroups()).toEqual([
      { group: 'A', pending: 1, running: 1, paused: false, limited: false },
    ]);
  });

  it('pauseGroup: the group starts nothing; resumeGroup: it goes on', async () => {
    const q = fx.queue<Data>();
    await q.addBulk([...bulk('A', 2), ...bulk('B', 2)]);
    await q.pauseGroup('A');
    expect(await take(q, 10)).toEqual(['B0', 'B1']);
    expect((await q.getGroups()).find((g) => g.group === 'A')).toMatchObject({ paused: true });
    await q.resumeGroup('A');
    expect(await take(q, 10)).toEqual(['A0', 'A1']);
  });

  it('drainGroup removes its pending jobs only; cancel takes a job out of its group', async () => {
    const q = fx.queue<Data>();
    const ids = await q.addBulk([...bulk('A', 4), ...bulk('B', 2)]);
    const [running] = await q.lease({ count: 1, leaseMs: 60_000 });
    expect(running!.group).toBe('A');
    expect(await q.cancel(ids[1]!.id)).toBe(true);
    expect(await q.drainGroup('A')).toBe(2);
    expect((await q.counts()).pending).toBe(2);
    expect(await take(q, 10)).toEqual(['B0', 'B1']);
    expect(await q.complete(running as LeasedJob<Data>)).toBe(true);
    expect((await q.getGroups()).map((g) => g.group)).toEqual(['B']);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it("a changed or removed group rate limit applies at once; a RateLimitError's hold stays", async () => {
    // (A group held by its old limit waited its window out: up to a day.)
    const q = fx.queue<Data>();
    await q.setGroupRateLimit('T', { max: 1, durationMs: 3_600_000 });
    await q.addBulk(bulk('T', 4));
    const [first] = await q.lease({ count: 5 });
    expect(await q.complete(first!)).toBe(true);
    expect(await take(q, 5)).toEqual([]);
    await q.setGroupRateLimit('T', { max: 1_000, durationMs: 1_000 });
    const [second] = await q.lease({ count: 1 });
    expect(second!.data.i).toBe(1);
    // Its handler says the remote side wants the group to wait: a limit change keeps that.
    expect(await q.rateLimited(second!, 3_600_000)).toBeGreaterThan(0);
    await q.setGroupRateLimit('T', null);
    expect(await take(q, 5)).toEqual([]);
    expect((await q.getGroups()).find((g) => g.group === 'T')).toMatchObject({ limited: true });
  });

  it('a group whose last job ends is listed no more at once, whatever ended it', async () => {
    // (A lease round leaves the groups it served in the ready set: one whose last job it took
    // stayed listed, pending 0 and running 0, until the next lease call on the queue.)
    const q = fx.queue<Data>();
    await q.add({ i: 0 }, { group: 'C' });
    await q.add({ i: 0 }, { group: 'F', maxAttempts: 1 });
    await q.add({ i: 0 }, { group: 'X' });
    const jobs = await q.lease({ count: 3, leaseMs: 60_000 });
    expect(jobs.map((j) => j.group)).toEqual(['C', 'F', 'X']);
    expect(await q.complete(jobs[0]!)).toBe(true);
    expect(await q.fail(jobs[1]!, new Error('no'))).toBe('dead');
    expect(await q.cancel(jobs[2]!.id)).toBe(true);
    expect(await q.getGroups()).toEqual([]);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('drainGroup of a group with nothing pending, or exactly a page of jobs, answers a count', async () => {
    // (Its script asked HMGET with no field for an empty page: SCRIPT_ERROR, after a full page
    // of 1 000 had been removed.)
    const q = fx.queue<Data>();
    expect(await q.drainGroup('never')).toBe(0);
    await q.addBulk(bulk('A', 1_000));
    expect(await q.drainGroup('A')).toBe(1_000);
    expect(await q.drainGroup('A')).toBe(0);
    expect((await q.counts()).pending).toBe(0);
    expect((await q.repair()).fixes).toEqual([]);
  });
});
