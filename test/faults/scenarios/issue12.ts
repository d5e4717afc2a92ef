/**
 * Issue 12's scenarios (run by run.ts with the others):
 * - `defaults`: Nest worker apps on the module's and the core's defaults only (its own cleaner
 *   cleans), one SIGKILLed every 1–3 s (never the last one ready): recovery of every job the
 *   killed worker held;
 * - `poison`: a few jobs whose handler exits the process: dead-lettered after the lease-expiry
 *   cap, the jobs beside them never;
 * - `client-kill`: `CLIENT KILL TYPE normal` every 2 s with the default 30 s lease: how long an
 *   acknowledged add waits to start, how long the queue takes to drain after the last add.
 * The `assert*` flags turn the targets into violations once the core meets them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Fault, JobRec } from '../records.js';
import { CONCURRENCY, leaseExpiryExplained, quickWork, scale } from '../common.js';
import type { Ctx, Scenario } from '../ctx.js';

type Base = Pick<
  Scenario,
  'queues' | 'worker' | 'cidShare' | 'bulkShare' | 'cancelShare' | 'drainTimeoutMs' | 'storeResults'
>;

/** Poison pills of the `poison` scenario: this many, spread over its first half. */
const PILLS = 3;

export function issue12Scenarios(base: Base): Scenario[] {
  return [
    {
      ...base,
      id: 'defaults',
      title: 'kill -9 Nest worker apps, module and core defaults only',
      // Smaller than issue 12's 5 000 over 60 s: its drain alone takes up to a lease (30 s).
      jobs: scale(2_000, 1_500),
      rate: scale(2_000 / 25, 1_500 / 20),
      queues: ['fd'],
      worker: 'nest',
      redis: {},
      // Nothing set: heartbeatTimeoutMs, leaseMs, maxLeaseExpiries, backoff are the core's, the
      // cleaner (interval, guard) and shutdownTimeoutMs the module's. Results are kept only to
      // prove completions whose `completed` event died with the process.
      queueOptions: {},
      workerOptions: { concurrency: CONCURRENCY },
      shutdownTimeoutMs: 'default',
      cleaner: 'module',
      // A dead worker's jobs (hand-offs included) come back after the heartbeat timeout (2 s)
      // plus up to a cleaner interval (500 ms): asserted by assertRecovery.
      drainTimeoutMs: 90_000,
      behavior: (r) => (r() < 0.05 ? { b: 'work', ms: 50 + Math.floor(r() * 250) } : quickWork(r)),
      async inject(ctx) {
        while (ctx.producing) {
          await sleep(1_000 + ctx.rand() * 2_000);
          if (!ctx.producing) break;
          // Never the last ready app: its jobs' recovery is their re-run elsewhere, and with
          // no app left it would measure how fast the replacements boot (a Nest app takes
          // seconds on a loaded 2-core VM), plus the all-silent rule (reclaim.lua: with no
          // beat landing, nobody is judged until beats resume).
          const slot = ctx.readySlot(1);
          if (slot !== undefined) await ctx.kill9(slot);
        }
      },
      deadOk: leaseExpiryExplained(['kill9']),
      recovery: 'SIGKILL → re-run of each job it held (leased to it, or handed off and running)',
      heldRecovery: true,
      bystanders: { exclude: [] },
      assertRecovery: true,
      assertBystanders: true,
    },
    {
      ...base,
      id: 'poison',
      title: `poison pills (${PILLS} handlers that process.exit(1)) among ordinary jobs`,
      // Quick-sized in both modes: the pills' three runs each end within seconds.
      jobs: 900,
      rate: 100,
      cancelShare: 0,
      redis: {},
      queueOptions: {
        heartbeatTimeoutMs: 1_000,
        leaseMs: 10_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      restartCrashed: true,
      behavior(r, i, n) {
        const step = Math.floor(n / (2 * PILLS));
        if (i > 0 && i % step === 0 && i / step <= PILLS) return { b: 'exit', ms: 0 };
        return r() < 0.05 ? { b: 'work', ms: 50 + Math.floor(r() * 250) } : quickWork(r);
      },
      inject: async (ctx) => {
        while (ctx.producing) await sleep(100);
      },
      deadOk: (reason: string, job: JobRec | undefined, inLife: Fault[]) => {
        const m = /^lease expired (\d+) times/.exec(reason);
        if (!m || !inLife.some((f) => f.kind === 'crash')) return null;
        return job?.b === 'exit'
          ? `poison pill: lease expired ${m[1]} times`
          : `bystander of a poison pill: lease expired ${m[1]} times`;
      },
      recovery: 'crash → re-run of each job in flight beside the pill',
      bystanders: { exclude: ['exit'] },
      assertBystanders: true,
      async finalChecks(ctx: Ctx) {
        const pills = ctx.jobs.filter((j) => j.b === 'exit' && j.ackId !== undefined);
        const dead = new Map(ctx.dead.map((d) => [`${d.queue}\t${d.id}`, d.reason]));
        const crashes = ctx.faults.filter((f) => f.kind === 'crash').length;
        ctx.note(`${pills.length} poison pills, ${crashes} worker crashes`);
        if (pills.length !== PILLS) ctx.violation(`${pills.length} poison pills acknowledged`);
        for (const p of pills) {
          const reason = dead.get(`${p.queue}\t${p.ackId}`);
          if (reason === undefined || !/^lease expired/.test(reason))
            ctx.violation(
              `poison pill ${p.queue}/${p.ackId} not dead-lettered for expired leases (${reason ?? 'not dead'})`,
            );
        }
      },
    },
    {
      ...base,
      id: 'client-kill',
      title: 'CLIENT KILL TYPE normal every 2 s, default lease (30 s) and heartbeat',
      // 20 s, not issue 12's 60 s: the drain alone takes up to a lease (30 s) today.
      jobs: scale(1_500, 1_000),
      rate: scale(1_500 / 20, 1_000 / 15),
      queues: ['fk'],
      cidShare: 0.7,
      redis: {},
      queueOptions: {},
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      drainTimeoutMs: 90_000,
      async inject(ctx) {
        while (ctx.producing) {
          await sleep(2_000);
          if (!ctx.producing) break;
          await ctx.clientKill('normal');
        }
      },
      behavior: (r) => (r() < 0.05 ? { b: 'work', ms: 100 + Math.floor(r() * 900) } : quickWork(r)),
      deadOk: leaseExpiryExplained(['client-kill-normal']),
      recovery: 'kill → next completion',
      assertReconcile: true,
      assertNoDupAdds: true,
      assertNoRerunAfterEnd: true,
      assertLiveWorkers: true,
    },
  ];
}
