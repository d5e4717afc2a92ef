/**
 * The core scenario `slow` (scenarios/core.ts runs it with its base): slow, event-loop-blocking
 * and hung handlers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Behavior } from '../handler.js';
import { CONCURRENCY, quickWork, scale } from '../common.js';
import type { Scenario } from '../ctx.js';

export const slowHandlers = {
  id: 'slow',
  title: 'slow, event-loop-blocking and hung handlers',
  storeResults: false,
  jobs: scale(4_000, 1_000),
  rate: 400,
  redis: {},
  queueOptions: {
    heartbeatTimeoutMs: 1_000,
    // Margins over a busy block (1 200 ms, ≤ 1 per BUSY_GAP_MS per process): a renewal
    // (every leaseMs / 3) delayed by one still leaves ~1.5 s of the lease; a slow job's timer
    // delayed by one still fires ~1.4 s before jobTimeoutMs.
    leaseMs: 4_000,
    maxAttempts: 3,
    backoff: { type: 'fixed', delayMs: 200 },
  },
  workerOptions: { concurrency: CONCURRENCY, jobTimeoutMs: 7_000, idleTimeoutMs: 2_000 },
  behavior(r, i, n) {
    // Hung jobs early, so that their three timed-out attempts end within the run.
    if (i < n * 0.2 && i % Math.floor(n / 25) === 3) return { b: 'hang', ms: 0 };
    if (i < n * 0.2 && i % Math.floor(n / 25) === 7) return { b: 'hang1', ms: 0 };
    // Slow: longer than its lease (4 000 ms), so only renewals keep it. A busy block of its
    // process delays its timer by up to 1 200 ms: 4 400 + 1 200 stays well under
    // jobTimeoutMs. (With 4 000 ms against 5 000, a block ending after the 5 000 ms mark made
    // both timers due at once, and Node ran the job's timeout first: a legit timeout, re-run.)
    if (i % Math.floor(n / 40) === 5) return { b: 'slow', ms: 4_400 };
    if (i % Math.floor(n / 30) === 11) return { b: 'busy', ms: 1_200 };
    return quickWork(r);
  },
  inject: async (ctx) => {
    while (ctx.producing) await sleep(100);
  },
  deadOk: (reason, job) =>
    job?.b === 'hang' && /timed out after 7000 ms/.test(reason)
      ? 'hung handler timed out on every attempt (by design)'
      : null,
  recoveryOf(logs) {
    // A hung attempt's timeout → the job's next run (backoff 200 ms).
    const out: number[] = [];
    const byJob = new Map<string, number[]>();
    for (const e of logs.execs) {
      const list = byJob.get(`${e.queue}\t${e.id}\t${e.attempt}`) ?? [];
      list.push(e.at);
      byJob.set(`${e.queue}\t${e.id}\t${e.attempt}`, list);
    }
    for (const e of logs.execs) {
      if (e.attempt < 2) continue;
      const prev = byJob.get(`${e.queue}\t${e.id}\t${e.attempt - 1}`);
      if (prev) out.push(e.at - (prev[0]! + 7_000));
    }
    return out;
  },
  async finalChecks(ctx) {
    const logs = ctx.logs!;
    // Jobs the producer tried to cancel are left out (they may never have run to the end).
    const kept = ctx.jobs.filter((j) => j.ackId !== undefined && j.cancel === undefined);
    const kinds = new Map(kept.map((j) => [`${j.queue}\t${j.ackId}`, j.b]));
    const runs = (b: Behavior) => logs.execs.filter((e) => kinds.get(`${e.queue}\t${e.id}`) === b);
    const done = (b: Behavior) => logs.dones.filter((d) => kinds.get(`${d.queue}\t${d.id}`) === b);
    const blocked = logs.events.filter((e) => e.kind === 'B' && e.fields[0] === 'blocked');
    const count = (b: Behavior) => kept.filter((j) => j.b === b).length;
    ctx.note(
      `slow ${count('slow')} (runs ${runs('slow').length}, completed ${done('slow').length}); ` +
        `busy ${count('busy')} (${blocked.length} blocked the loop ` +
        `${Math.min(...blocked.map((e) => Number(e.fields[1])))}-${Math.max(...blocked.map((e) => Number(e.fields[1])))} ms, completed ${done('busy').length}); ` +
        `hang ${count('hang')} (runs ${runs('hang').length}); hang1 ${count('hang1')} (completed ${done('hang1').length})`,
    );
    if (runs('slow').length !== count('slow'))
      ctx.violation('a slow job (longer than its lease) ran more than once');
    if (blocked.length === 0) ctx.violation('no handler blocked the event loop');
    if (runs('hang').length !== 3 * count('hang'))
      ctx.violation(`hung jobs should run exactly maxAttempts (3) times each`);
    if (done('hang1').length !== count('hang1'))
      ctx.violation('a job hung on attempt 1 did not complete on attempt 2');
    if (ctx.cleanTotals.deadWorkers > 0)
      ctx.violation(
        `${ctx.cleanTotals.deadWorkers} live worker(s) reclaimed as dead (busy event loop)`,
      );
    if (ctx.cleanTotals.reclaimed > 0)
      ctx.violation(`${ctx.cleanTotals.reclaimed} lease(s) expired although renewed`);
  },
  recovery: 'hung attempt timeout → re-run',
} satisfies Partial<Scenario>;
