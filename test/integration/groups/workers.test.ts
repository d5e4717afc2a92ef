/**
 * Groups (issue 27) with Workers: the fairness figure (a backlog of one group delays another by
 * at most a turn), per-group rate limits across workers, RateLimitError for a grouped job,
 * hand-off of a grouped job to a parked worker. Every order and time is Redis's: the event
 * log's order (each lease call writes one entry, in the order Redis ran them) and lease times.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { RateLimitError, type QueueEvent, type WorkQueue } from '../../../lib/index.js';
import { parseEntry } from '../../../lib/events/parse.js';
import { sameQueue } from '../../support/core.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach((e) => console.error('worker error', e));
const LEASE_MS = 30_000;

/** Every event the queue's log holds, in the order Redis wrote them. */
async function events(q: WorkQueue<unknown>): Promise<QueueEvent[]> {
  const client = q.client as Redis;
  const out: QueueEvent[] = [];
  let from = '-';
  for (;;) {
    const page = await client.xrange(q.keys.eventLog, from, '+', 'COUNT', 1000);
    for (const [id, fields] of page) out.push(...parseEntry(id, fields));
    if (page.length < 1000) return out;
    from = `(${page.at(-1)![0]}`;
  }
}

describe('fairness', () => {
  it("group A has 20 000 pending, B adds 10: with one worker c=5, all of B's start before 50 more of A's", async () => {
    const q = fx.queue<string>({ events: { maxLen: 1_000_000 } });
    for (let i = 0; i < 20_000; i += 5_000) {
      await q.addBulk(Array.from({ length: 5_000 }, () => ({ data: 'a', opts: { group: 'A' } })));
    }
    let started = 0;
    worker(
      q,
      async () => {
        started++;
        await new Promise((r) => setImmediate(r));
      },
      { concurrency: 5 },
    );
    await waitFor(() => started >= 200, { what: "A's first 200 jobs" });
    const b = await q.addBulk(
      Array.from({ length: 10 }, () => ({ data: 'b', opts: { group: 'B' } })),
    );
    const ids = new Set(b.map((r) => r.id));
    await waitFor(async () => (await q.getGroups()).every((g) => g.group !== 'B'), {
      timeoutMs: 15_000,
      what: "B's jobs to finish",
    });
    const log = await events(q);
    const added = log.findIndex((e) => e.kind === 'added' && ids.has(e.id));
    const starts = log.map((e) => e.kind === 'active' && ids.has(e.id));
    const lastB = starts.lastIndexOf(true);
    expect(added).toBeGreaterThan(0);
    expect(log[added]).toMatchObject({ group: 'B' });
    const aBetween = log
      .slice(added, lastB)
      .filter((e) => e.kind === 'active' && e.group === 'A').length;
    console.log(`fairness: ${aBetween} of A's jobs started between B's add and B's last start`);
    expect(aBetween).toBeLessThan(50);
  }, 60_000);
});

describe('per-group limits across workers', () => {
  it('limit 10 / 1 s, 3 groups × 60 jobs, 3 workers: ≤ 10 leases of a group per 1 000 ms of Redis time, groups in parallel', async () => {
    const q = fx.queue<number>({
      leaseMs: LEASE_MS,
      groups: { limiter: { max: 10, durationMs: 1_000 } },
    });
    await q.addBulk(
      ['A', 'B', 'C'].flatMap((group) =>
        Array.from({ length: 60 }, (_, i) => ({ data: i, opts: { group } })),
      ),
    );
    const at: Record<string, number[]> = { A: [], B: [], C: [] };
    for (let i = 0; i < 3; i++) {
      const qi = sameQueue(fx, q, { leaseMs: LEASE_MS });
      worker(
        qi,
        async (job) => {
          // The lease's start (the lease script's Redis time, as its rate log has it): not
          // its deadline less LEASE_MS, which a lease extension moves (the worker extends
          // every held job once its event subscription is up: events-channel.ts catchUp).
          at[job.group!]!.push((await qi.getJob(job.id))!.startedAt!);
        },
        { concurrency: 10 },
      );
    }
    await waitFor(() => Object.values(at).every((t) => t.length === 60), {
      timeoutMs: 30_000,
      what: '180 jobs',
    });
    for (const t of Object.values(at)) {
      t.sort((x, y) => x - y);
      // Exact: lease times are the scripts' Redis time; the 11th lease after any lease of a
      // group comes at least 1 000 ms later (a window (t - 1000, t] holds at most 10).
      for (let i = 0; i + 10 < t.length; i++)
        expect(t[i + 10]! - t[i]!).toBeGreaterThanOrEqual(1_000);
    }
    // In parallel: every group had its first 10 leases before any group's 11th.
    const firsts = Object.values(at).map((t) => t[9]!);
    const elevenths = Object.values(at).map((t) => t[10]!);
    expect(Math.max(...firsts)).toBeLessThan(Math.min(...elevenths));
    const all = Object.values(at).flat();
    const span = Math.max(...all) - Math.min(...all);
    console.log(
      `group rate 10/s, 3 groups × 60 jobs, 3 workers: ${span} ms (one group alone: ≥ 5 000)`,
    );
  }, 60_000);

  it.each([0, 4] as const)(
    'RateLimitError of a grouped job holds its group only: others run meanwhile (prefetch %s)',
    async (prefetch) => {
      const q = fx.queue<string>({ leaseMs: LEASE_MS });
      await q.addBulk([
        ...['a1', 'a2'].map((data) => ({ data, opts: { group: 'A' } })),
        ...['b1', 'b2', 'b3'].map((data) => ({ data, opts: { group: 'B' } })),
      ]);
      const runs: string[] = [];
      let thrown = false;
      worker(
        q,
        async (job) => {
          runs.push(job.data);
          if (job.data === 'a1' && !thrown) {
            thrown = true;
            throw new RateLimitError(60_000);
          }
        },
        // (With prefetch, a2 was leased already: it goes back behind a1, unstarted.)
        { concurrency: 1, prefetch },
      );
      await waitFor(() => runs.length === 4, { what: 'a1 and B' });
      expect(runs).toEqual(['a1', 'b1', 'b2', 'b3']);
      await waitFor(async () => (await q.counts()).leased === 0, { what: "b3's complete" });
      expect(await q.isPaused()).toBe(false);
      expect((await q.flowState()).rateLimitedUntil).toBe(0);
      expect(await q.getGroups()).toEqual([
        { group: 'A', pending: 2, running: 0, paused: false, limited: true },
      ]);
      const [a1, a2] = await q.getJobs('pending', { group: 'A' });
      expect(a1).toMatchObject({ data: 'a1', attemptsMade: 0 });
      expect(a2).toMatchObject({ data: 'a2', attemptsMade: 0 });
    },
  );

  it('a grouped job added while a worker is parked is handed off to it (within its limits)', async () => {
    const q = fx.queue<string>({ groups: { concurrency: 1 } });
    const seen: string[] = [];
    const release: Array<() => void> = [];
    const w = worker(
      q,
      (job) => {
        seen.push(job.data);
        return new Promise<void>((r) => release.push(r));
      },
      { concurrency: 3 },
    );
    await w.start();
    await waitFor(async () => (await (q.client as Redis).zcard(q.keys.key('parked'))) === 1, {
      what: 'the worker parked',
    });
    await q.add('x1', { group: 'X' });
    await waitFor(() => seen.length === 1, { what: 'x1 handed off' });
    // X is at its concurrency: x2 waits in its group (no hand-off past the limit).
    await q.add('x2', { group: 'X' });
    await q.add('y1', { group: 'Y' });
    await waitFor(() => seen.length === 2, { what: 'y1' });
    expect(seen).toEqual(['x1', 'y1']);
    expect((await q.getGroups()).find((g) => g.group === 'X')).toMatchObject({
      pending: 1,
      running: 1,
    });
    release.shift()!();
    await waitFor(() => seen.length === 3, { what: 'x2 after x1' });
    expect(seen[2]).toBe('x2');
    for (const r of release.splice(0)) r();
    const log = await events(q);
    expect(log.filter((e) => e.kind === 'active').map((e) => e.group)).toContain('X');
  });

  it('pauseGroup: the jobs of the group a worker prefetched go back; it starts them once resumed', async () => {
    // (Only the lease scripts knew of a group's pause: a worker started what it had prefetched.)
    const q = fx.queue<string>();
    await q.addBulk(
      ['a0', 'a1', 'a2', 'a3', 'b0'].map((d) => ({
        data: d,
        opts: { group: d[0]!.toUpperCase() },
      })),
    );
    const seen: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = worker(
      q,
      async (job) => {
        seen.push(job.data);
        if (job.data === 'a0') await gate;
      },
      { concurrency: 1, prefetch: 4 },
    );
    await w.start();
    await waitFor(async () => (await q.counts()).leased === 5, {
      what: 'a0 running, 4 prefetched',
    });
    await q.pauseGroup('A');
    await waitFor(async () => (await q.counts()).leased === 2, {
      what: "the paused group's prefetched jobs given back",
    });
    release();
    await waitFor(async () => (await q.counts()).leased === 0, { what: 'a0 and b0 done' });
    expect(seen.sort()).toEqual(['a0', 'b0']);
    expect((await q.getGroups()).find((g) => g.group === 'A')).toMatchObject({
      pending: 3,
      paused: true,
    });
    await q.resumeGroup('A');
    await waitFor(() => seen.length === 5, { what: 'the rest of A after resume' });
    expect(seen.slice(2)).toEqual(['a1', 'a2', 'a3']);
  });

  it("a handed-off job used its group's rate window: the next one starts when the window ends, not at the idle timeout", async () => {
    // (The hand-off logged its start but no hold; the add that found the group held woke no
    // one, and the parked worker slept its idleTimeoutMs: 60 s here.)
    const q = fx.queue<string>({ groups: { limiter: { max: 1, durationMs: 300 } } });
    const seen: string[] = [];
    const w = worker(q, (job) => void seen.push(job.data), { idleTimeoutMs: 60_000 });
    await w.start();
    const parked = async () => (await (q.client as Redis).zcard(q.keys.key('parked'))) === 1;
    await waitFor(parked, { what: 'the worker parked' });
    const { id } = await q.add('g0', { group: 'G' });
    await waitFor(() => seen.length === 1, { what: 'g0 handed off' });
    const g0 = await waitFor(async () => {
      const j = await q.getJob(id);
      return j?.state === 'completed' || j === null ? true : undefined;
    });
    expect(g0).toBe(true);
    await waitFor(parked, { what: 'the worker parked again' });
    await q.add('g1', { group: 'G' });
    await waitFor(() => seen.length === 2, { what: 'g1 once the window ended', timeoutMs: 15_000 });
    expect(seen).toEqual(['g0', 'g1']);
  });
});
