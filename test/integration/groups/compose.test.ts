/**
 * Groups (issue 27) with everything else: bad input refused whole, events, delayed jobs,
 * schedules, dedupe by caller id, queue-wide pause, cancel of a running job, change of priority,
 * drain and obliterate, repair of a tampered grouped job.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { WorkQueue, WorkQueueError, type QueueEvent } from '../../../lib/index.js';
import { parseEntry } from '../../../lib/events/parse.js';
import { errorOf } from '../../support/core.js';
import { keysMatching } from '../../support/keys.js';
import { keysButCounters, QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

const take = async (q: WorkQueue<string>, count = 10) =>
  (await q.lease({ count, leaseMs: 60_000 })).map((j) => j.data);

async function events(q: WorkQueue<string>): Promise<QueueEvent[]> {
  const page = await (q.client as Redis).xrange(q.keys.eventLog, '-', '+');
  return page.flatMap(([id, fields]) => parseEntry(id, fields));
}

describe('bad input: refused, every problem listed, nothing written', () => {
  it('add and addBulk: empty, too long or non-string groups', async () => {
    const q = fx.queue<string>();
    const e = await errorOf(
      q.addBulk([
        { data: 'a', opts: { group: '' } },
        { data: 'b', opts: { group: 'x'.repeat(257) } },
        { data: 'c', opts: { group: 42 as unknown as string } },
        { data: 'd', opts: { group: { id: 'x' } as unknown as string } },
        { data: 'e', opts: { group: 'é'.repeat(129) } },
        { data: 'f', opts: { group: 'ok' } },
      ]),
    );
    expect(e).toBeInstanceOf(WorkQueueError);
    expect((e as WorkQueueError).code).toBe('INVALID_ARGUMENT');
    expect((e as WorkQueueError).problems).toEqual([
      'job 0: group must be a non-empty string of at most 256 bytes, got 0 bytes',
      'job 1: group must be a non-empty string of at most 256 bytes, got 257 bytes',
      'job 2: group must be a non-empty string of at most 256 bytes, got 42',
      "job 3: group must be a string (BullMQ Pro's group: { id } is group: id here)",
      'job 4: group must be a non-empty string of at most 256 bytes, got 258 bytes',
    ]);
    expect(await keysMatching(q.client as Redis, `${q.keys.base}*`)).toEqual([]);
    await q.add('x', { group: 'é'.repeat(128) });
    expect((await q.getGroups())[0]!.group).toBe('é'.repeat(128));
  });

  it('the groups option and the group setters', () => {
    const e = (() => {
      try {
        new WorkQueue(fx.client(), 'q', {
          groups: {
            concurrency: 0,
            limiter: { max: -1, durationMs: 1.5 },
            nope: 1,
          } as never,
        });
      } catch (err) {
        return err as WorkQueueError;
      }
      throw new Error('accepted');
    })();
    expect(e.code).toBe('INVALID_OPTIONS');
    expect(e.problems).toEqual([
      'groups: unknown option "nope"; known: concurrency, limiter',
      'groups.concurrency must be an integer 1..1000000, got 0',
      'groups.limiter.max must be an integer 1..1000000, got -1',
      'groups.limiter.durationMs must be an integer 1..86400000, got 1.5',
    ]);
  });

  it('setGroupConcurrency, setGroupRateLimit, getGroups, getJobs({ group }) refuse bad input whole', async () => {
    const q = fx.queue<string>();
    const codes = await Promise.all([
      errorOf(q.setGroupConcurrency('', 0)),
      errorOf(q.setGroupRateLimit('g', { max: 0, durationMs: 0 })),
      errorOf(q.getGroups({ offset: -1, limit: 0 })),
      errorOf(q.getJobs('leased', { group: '' })),
      errorOf(q.pauseGroup(7 as unknown as string)),
      // (NaN and Infinity were shown as JSON writes them: null.)
      errorOf(q.setGroupConcurrency('g', Number.NaN)),
      errorOf(q.setGroupRateLimit('g', { max: Infinity, durationMs: 1_000 })),
    ]);
    expect(codes.map((e) => (e as WorkQueueError).problems)).toEqual([
      [
        'group must be a non-empty string of at most 256 bytes, got 0 bytes',
        'concurrency must be an integer 1..1000000, got 0',
      ],
      [
        'rate limit.max must be an integer 1..1000000, got 0',
        'rate limit.durationMs must be an integer 1..86400000, got 0',
      ],
      ['offset must be an integer >= 0, got -1', 'limit must be an integer 1..1000, got 0'],
      [
        'group must be a non-empty string of at most 256 bytes, got 0 bytes',
        'group lists pending jobs only, not leased',
      ],
      ['group must be a non-empty string of at most 256 bytes, got 7'],
      ['concurrency must be an integer 1..1000000, got NaN'],
      ['rate limit.max must be an integer 1..1000000, got Infinity'],
    ]);
    expect(await keysMatching(q.client as Redis, `${q.keys.base}*`)).toEqual([]);
  });

  it('a group on a queue without the groups option: fairness only, no limits', async () => {
    const q = fx.queue<string>();
    await q.addBulk(['a1', 'a2', 'a3', 'b1'].map((d) => ({ data: d, opts: { group: d[0]! } })));
    expect(await take(q)).toEqual(['a1', 'b1', 'a2', 'a3']);
  });
});

describe('composition', () => {
  it('events carry the group (added, active, completed, failed, dead)', async () => {
    const q = fx.queue<string>({ maxAttempts: 1 });
    await q.add('x', { group: 'G' });
    await q.add('y');
    const [x, y] = await q.lease({ count: 2, leaseMs: 60_000 });
    await q.complete(x!);
    await q.fail(y!, new Error('no'));
    const log = await events(q);
    const of = (id: string) => log.filter((e) => e.id === id).map((e) => [e.kind, e.group]);
    expect(of(x!.id)).toEqual([
      ['added', 'G'],
      ['active', 'G'],
      ['completed', 'G'],
    ]);
    expect(of(y!.id)).toEqual([
      ['added', undefined],
      ['active', undefined],
      ['failed', undefined],
      ['dead', undefined],
    ]);
    await q.add('z', { group: 'G', maxAttempts: 1 });
    const [z] = await q.lease({ leaseMs: 60_000 });
    expect(z!.group).toBe('G');
    await q.fail(z!, new Error('no'));
    expect((await events(q)).filter((e) => e.id === z!.id).map((e) => e.group)).toEqual([
      'G',
      'G',
      'G',
      'G',
    ]);
  });

  it('delayed and scheduled grouped jobs join their group when due', async () => {
    const q = fx.queue<string>();
    await q.add('later', { group: 'A', delayMs: 1 });
    await q.upsertSchedule('tick', { every: 100, limit: 1 }, { data: 'tick', group: 'A' });
    expect((await q.getSchedule('tick'))!.template).toMatchObject({ group: 'A' });
    await waitFor(async () => (await q.clean(), (await q.counts()).pending === 2), {
      what: 'the delayed job and the tick due',
    });
    await q.add('now', { group: 'B' });
    const got = await q.lease({ count: 10, leaseMs: 60_000 });
    expect(got.map((j) => [j.data, j.group]).sort()).toEqual(
      [
        ['later', 'A'],
        ['now', 'B'],
        ['tick', 'A'],
      ].sort(),
    );
  });

  it('a step (moveToDelayed, DelayedError) ends its run: the group goes on, the step joins its back when due', async () => {
    const q = fx.queue<string>({ groups: { concurrency: 1 } });
    await q.addBulk(['s', 'a'].map((data) => ({ data, opts: { group: 'A' } })));
    const [s] = await q.lease({ leaseMs: 60_000 });
    expect(s!.data).toBe('s');
    // Before the fix the group kept counting the step as running: stuck at concurrency 1.
    await q.moveToDelayed(s!, 60_000);
    expect(await q.getGroups()).toEqual([
      { group: 'A', pending: 1, running: 0, paused: false, limited: false },
    ]);
    const [a] = await q.lease({ leaseMs: 60_000 });
    expect(a!.data).toBe('a');
    expect((await events(q)).filter((e) => e.id === s!.id).map((e) => [e.kind, e.group])).toEqual([
      ['added', 'A'],
      ['active', 'A'],
      ['delayed', 'A'],
    ]);
    await q.complete(a!);
    // Due now: back in its group, and the group empties and is forgotten once it completed.
    // (changeDelay's 'delayed' event has the group too: it had none.)
    expect(await q.changeDelay(s!.id, 0)).toBe(true);
    expect((await events(q)).filter((e) => e.id === s!.id).map((e) => [e.kind, e.group])).toEqual([
      ['added', 'A'],
      ['active', 'A'],
      ['delayed', 'A'],
      ['delayed', 'A'],
    ]);
    await q.clean();
    const [again] = await q.lease({ leaseMs: 60_000 });
    expect(again).toMatchObject({ id: s!.id, group: 'A' });
    await q.complete(again!);
    expect(await q.getGroups()).toEqual([]);
  });

  it('dedupe by caller id within groups; queue-wide pause holds every group', async () => {
    const q = fx.queue<string>();
    expect((await q.add('a', { group: 'A', id: 'one' })).added).toBe(true);
    expect((await q.add('a', { group: 'B', id: 'one' })).added).toBe(false);
    await q.pause();
    expect(await take(q)).toEqual([]);
    await q.resume();
    expect(await take(q)).toEqual(['a']);
  });

  it('a replacing add (dedupe replace) of a waiting grouped job takes it out of its group', async () => {
    // (It left the old job's entry and pending count in its group: counts() kept a pending job
    // that never came, and repair() did not see it.)
    const q = fx.queue<string>();
    const replace = (data: string, group: string) =>
      q.add(data, { id: 'order-1', group, dedupe: { ttlMs: 60_000, replace: true } });
    await replace('v1', 'T');
    expect((await replace('v2', 'T')).replaced).toBe(true);
    expect((await replace('v3', 'U')).replaced).toBe(true);
    expect((await q.counts()).pending).toBe(1);
    expect((await q.getGroups()).map((g) => [g.group, g.pending])).toEqual([['U', 1]]);
    const [job] = await q.lease({ count: 10, leaseMs: 60_000 });
    expect(job!.data).toBe('v3');
    expect(await q.complete(job!)).toBe(true);
    expect((await q.counts()).pending).toBe(0);
    expect((await q.lease({ count: 10 })).length).toBe(0);
    expect((await q.repair()).fixes).toEqual([]);
  });

  it('cancel of a running grouped job frees its group (concurrency 1)', async () => {
    const q = fx.queue<string>({ groups: { concurrency: 1 } });
    await q.addBulk(['a1', 'a2'].map((data) => ({ data, opts: { group: 'A' } })));
    const [a1] = await q.lease({ leaseMs: 60_000 });
    expect(await take(q)).toEqual([]);
    expect(await q.cancel(a1!.id)).toBe(true);
    expect(await take(q)).toEqual(['a2']);
  });

  it('changePriority moves a grouped job within its group; drain() empties groups too', async () => {
    const q = fx.queue<string>();
    const [a1, a2] = await q.addBulk(['a1', 'a2'].map((data) => ({ data, opts: { group: 'A' } })));
    expect(await q.changePriority(a2!.id, 0)).toBe(true);
    expect(await q.getJob(a2!.id)).toMatchObject({ priority: 0, state: 'pending', group: 'A' });
    expect(await take(q, 1)).toEqual(['a2']);
    await q.addBulk(
      ['b1', 'u1'].map((data) => ({ data, opts: data[0] === 'b' ? { group: 'B' } : {} })),
    );
    expect(await q.drain()).toBe(3);
    expect((await q.counts()).pending).toBe(0);
    expect((await q.getGroups()).map((g) => [g.group, g.pending, g.running])).toEqual([
      ['A', 0, 1],
    ]);
    expect(await q.getJob(a1!.id)).toBeNull();
  });

  it('obliterate removes every group key', async () => {
    const q = fx.queue<string>({
      groups: { concurrency: 2, limiter: { max: 5, durationMs: 1000 } },
    });
    await q.addBulk(
      Array.from({ length: 30 }, (_, i) => ({ data: `${i}`, opts: { group: `g${i % 3}` } })),
    );
    await q.pauseGroup('g0');
    await q.lease({ count: 5, leaseMs: 60_000 });
    await q.obliterate({ force: true });
    expect(await keysButCounters(q.client as Redis, q)).toEqual([]);
  });

  it('repair: a grouped job out of its group, or in a pending list, goes back to its group', async () => {
    const q = fx.queue<string>();
    const [a, b] = await q.addBulk(['a', 'b'].map((data) => ({ data, opts: { group: 'A' } })));
    const r = q.client as Redis;
    await r.zrem(q.keys.groupPending('A'), a!.id);
    await r.zrem(q.keys.groupPending('A'), b!.id);
    await r.rpush(q.keys.pending(5), b!.id);
    const report = await q.repair();
    expect(report.fixes.sort()).toEqual([
      `${a!.id}: grouped job in no queue: requeued`,
      `${b!.id}: grouped job in a pending list; grouped job in no queue: requeued`,
    ]);
    expect((await q.repair()).fixes).toEqual([]);
    expect((await take(q)).sort()).toEqual(['a', 'b']);
  });
});
