import { afterAll, describe, expect, it } from '@jest/globals';
import type { CleanReport } from '../../../lib/index.js';
import { redisNow } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

const NOTHING: CleanReport = {
  promoted: 0,
  reclaimed: 0,
  deadLettered: 0,
  deadWorkers: 0,
  reclaimedFromWorkers: 0,
  resultsExpired: 0,
  callerIdsFreed: 0,
  completedTrimmed: 0,
};

describe('clean: expired leases', () => {
  it('reclaims an expired lease to the FRONT; a run beside others makes the job a suspect, not a counted expiry', async () => {
    const q = fx.queue<string>();
    await q.addBulk([{ data: 'a' }, { data: 'b' }, { data: 'c' }]);
    const [a] = await q.lease({ leaseMs: 60 });
    const [b] = await q.lease({ leaseMs: 60_000 });
    expect(await q.clean()).toEqual(NOTHING);
    const report = await waitFor(
      async () => {
        const r = await q.clean();
        return r.reclaimed > 0 ? r : null;
      },
      { what: 'the 60 ms lease to expire' },
    );
    expect(report).toEqual({ ...NOTHING, reclaimed: 1 });
    expect(await q.getJob(a!.id)).toMatchObject({
      state: 'pending',
      leaseExpiries: 0,
      attemptsMade: 0,
    });
    expect(await q.getJob(b!.id)).toMatchObject({ state: 'leased', leaseExpiries: 0 });
    // a is in front of c, which has been waiting longer; a suspect runs alone (an 's' token).
    const [solo, ...rest] = await q.lease({ count: 10, leaseMs: 60_000 });
    expect(rest).toEqual([]);
    expect([solo!.data, solo!.token.startsWith('s')]).toEqual(['a', true]);
    const jobs = await q.lease({ count: 10, leaseMs: 60_000 });
    expect(jobs.map((j) => [j.data, j.token.startsWith('s')])).toEqual([['c', false]]);
    // The old lease is stale now.
    expect(await q.extend(a!, 1_000)).toEqual([false]);
  });

  it('a batch of expired leases goes back to the front in its order (ids 1..12)', async () => {
    const q = fx.queue<number>();
    await q.addBulk(Array.from({ length: 13 }, (_, i) => ({ data: i })));
    const batch = await q.lease({ count: 12, leaseMs: 60 });
    expect(batch.map((j) => j.data)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    await waitFor(async () => (await q.clean()).reclaimed === 12, { what: 'the batch to expire' });
    // Each is a suspect now: one lease call gives one of them, alone, in their order.
    const again: number[] = [];
    for (let i = 0; i < 13; i++) {
      const got = await q.lease({ count: 20, leaseMs: 60_000 });
      expect(got.length).toBe(1);
      again.push(got[0]!.data);
    }
    expect(again).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it("at maxLeaseExpiries solo expiries the job is dead-lettered with reason 'lease expired'", async () => {
    const q = fx.queue<string>({ maxLeaseExpiries: 2 });
    await q.addBulk([{ data: 'crashy' }, { data: 'bystander' }]);
    await q.lease({ count: 2, leaseMs: 50 });
    await waitFor(async () => (await q.clean()).reclaimed === 2, { what: 'first expiry' });
    // Both ran together: neither is counted; both run alone from now on.
    expect(await q.getJob('1')).toMatchObject({ state: 'pending', leaseExpiries: 0 });
    const [first] = await q.lease({ count: 2, leaseMs: 50 });
    expect([first!.data, first!.token.startsWith('s')]).toEqual(['crashy', true]);
    await waitFor(async () => (await q.clean()).reclaimed === 1, { what: 'a solo expiry' });
    expect(await q.getJob('1')).toMatchObject({ state: 'pending', leaseExpiries: 1 });
    const [again] = await q.lease({ count: 2, leaseMs: 50 });
    expect(again!.leaseExpiries).toBe(1);
    const report = await waitFor(
      async () => {
        const r = await q.clean();
        return r.deadLettered > 0 ? r : null;
      },
      { what: 'second solo expiry' },
    );
    expect(report).toEqual({ ...NOTHING, deadLettered: 1 });
    const job = await q.getJob('1');
    expect(job).toMatchObject({ state: 'dead', leaseExpiries: 2, attemptsMade: 0 });
    expect(job!.deadReason).toContain('lease expired');
    const [dead] = await q.listDead();
    expect(dead!.reason).toContain('lease expired');
    // The bystander was never counted: it runs (alone, once) and completes.
    const [bystander] = await q.lease({ count: 2, leaseMs: 60_000 });
    expect(bystander).toMatchObject({ data: 'bystander', leaseExpiries: 0 });
    expect(await q.complete(bystander!)).toBe(true);
    expect(await q.counts()).toMatchObject({ pending: 0, leased: 0, dead: 1 });
    expect(await q.complete(again!)).toBe(true); // the stale holder may still finish it
  });
});

describe('clean: dead workers', () => {
  it('reclaims ALL leases of a worker whose heartbeat lapsed; a live worker keeps its own', async () => {
    const q = fx.queue<string>({ heartbeatTimeoutMs: 300 });
    await q.addBulk(['d1', 'd2', 'd3', 'l1', 'l2', 'waiting'].map((data) => ({ data })));
    const deadWorker = await q.registerWorker();
    const liveWorker = await q.registerWorker();
    expect(deadWorker).not.toBe(liveWorker);
    // LONG leases: only the heartbeat can get these back early.
    const gone = await q.lease({ count: 3, leaseMs: 600_000, workerId: deadWorker });
    const kept = await q.lease({ count: 2, leaseMs: 600_000, workerId: liveWorker });
    expect(gone.map((j) => j.data)).toEqual(['d1', 'd2', 'd3']);
    expect(kept.map((j) => j.data)).toEqual(['l1', 'l2']);
    expect((await q.counts()).workers).toBe(2);

    const beats = setInterval(() => void q.heartbeat(liveWorker), 50);
    try {
      const report = await waitFor(
        async () => {
          const r = await q.clean();
          return r.deadWorkers > 0 ? r : null;
        },
        { what: 'the dead worker to be detected', timeoutMs: 5_000 },
      );
      expect(report).toMatchObject({ deadWorkers: 1, reclaimedFromWorkers: 3, deadLettered: 0 });
      const counts = await q.counts();
      expect(counts).toMatchObject({ leased: 2, pending: 4, workers: 1 });
      for (const j of gone) {
        // They ran beside each other: suspects (each runs alone next), no expiry counted.
        expect(await q.getJob(j.id)).toMatchObject({ state: 'pending', leaseExpiries: 0 });
      }
      for (const j of kept) expect((await q.getJob(j.id))!.state).toBe('leased');
      // Reclaimed to the FRONT, in their order, ahead of the job that was waiting.
      const next: string[] = [];
      for (let i = 0; i < 4; i++) {
        next.push(...(await q.lease({ count: 10, leaseMs: 60_000 })).map((j) => j.data));
      }
      expect(next).toEqual(['d1', 'd2', 'd3', 'waiting']);
      // The dead worker's leases are stale; the live worker's still work.
      expect(await q.extend(gone, 1_000)).toEqual([false, false, false]);
      expect(await q.extend(kept, 1_000)).toEqual([true, true]);
      // A further clean finds nothing more.
      expect(await q.clean()).toEqual(NOTHING);
    } finally {
      clearInterval(beats);
    }
  });
  it('one clean reclaims every dead worker, however many (not 100 a clean)', async () => {
    const c = fx.client();
    const q = fx.queue<string>({ heartbeatTimeoutMs: 1_000 }, c);
    const dead = await Promise.all(Array.from({ length: 150 }, () => q.registerWorker()));
    const live = await q.registerWorker();
    const beats = setInterval(() => void q.heartbeat(live), 50);
    try {
      // Every one of them silent for the timeout (by Redis' clock), then one clean.
      const scores = await Promise.all(dead.map((id) => c.zscore(q.keys.key('workers'), id)));
      const last = Math.max(...scores.map(Number));
      await waitFor(async () => (await redisNow(c)) > last + 1_000, { what: 'all of them lapsed' });
      const report = await q.clean();
      expect(report.deadWorkers).toBe(dead.length);
      expect((await q.getWorkers()).map((w) => w.id)).toEqual([live]);
    } finally {
      clearInterval(beats);
    }
  });
});

describe('clean: a renewal is a sign of life', () => {
  it('a worker that extends a lease of its own is not taken for dead; one taken for dead is not brought back by a stale extend', async () => {
    const q = fx.queue<string>({ heartbeatTimeoutMs: 300 });
    await q.addBulk([{ data: 'a' }, { data: 'b' }]);
    const renewing = await q.registerWorker();
    const silent = await q.registerWorker();
    const [a] = await q.lease({ count: 1, leaseMs: 600_000, workerId: renewing });
    const [b] = await q.lease({ count: 1, leaseMs: 600_000, workerId: silent });
    // Neither beats (a main thread resumed before its heartbeat thread): one renews its lease.
    const renewals = setInterval(() => void q.extend([a!], 600_000), 50);
    try {
      let report = { deadWorkers: 0, reclaimedFromWorkers: 0 };
      await waitFor(
        async () => {
          const r = await q.clean();
          report = { deadWorkers: r.deadWorkers, reclaimedFromWorkers: r.reclaimedFromWorkers };
          return r.deadWorkers > 0;
        },
        { what: 'the silent worker taken for dead', timeoutMs: 5_000 },
      );
      expect(report).toEqual({ deadWorkers: 1, reclaimedFromWorkers: 1 });
      expect((await q.getJob(a!.id))!.state).toBe('leased');
      expect((await q.getJob(b!.id))!.state).toBe('pending');
      expect(await q.extend([b!], 1_000)).toEqual([false]);
      expect((await q.counts()).workers).toBe(1);
    } finally {
      clearInterval(renewals);
    }
  });
});

describe('clean: cost proportional to work', () => {
  it('with nothing to do on a queue of 100,000 pending jobs', async () => {
    const q = fx.queue<number>();
    const jobs = Array.from({ length: 100_000 }, (_, i) => ({ data: i }));
    await q.addBulk(jobs);
    expect((await q.counts()).pending).toBe(100_000);
    await q.clean(); // warm-up (start-up check done, script cached)
    const runs = 20;
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = process.hrtime.bigint();
      const report = await q.clean();
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
      expect(report).toEqual(NOTHING);
    }
    times.sort((a, b) => a - b);
    console.log(
      `clean() with nothing to do on 100,000 pending jobs: median ${times[runs >> 1]!.toFixed(3)} ms, ` +
        `min ${times[0]!.toFixed(3)} ms, max ${times[runs - 1]!.toFixed(3)} ms (${runs} runs, one round trip each)`,
    );
    expect(await q.counts()).toMatchObject({ pending: 100_000, delayed: 0, leased: 0, dead: 0 });
  });
});
