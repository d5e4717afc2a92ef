/** The core fault scenarios (issue 12's are in issue12.ts, issue 24's in issue24.ts). */
import { setTimeout as sleep } from 'node:timers/promises';
import { quantile } from '../analyze.js';
import type { Behavior } from '../handler.js';
import {
  CONCURRENCY,
  fmt,
  leaseExpiryExplained,
  QUICK,
  quickWork,
  RECONNECT_MS,
  scale,
} from '../common.js';
import type { Scenario } from '../ctx.js';
import { issue12Scenarios } from './issue12.js';
import { issue24Scenarios } from './issue24.js';
import { restartRedisLoop } from './restarts.js';
import { flowScenarios } from './flows.js';

export function scenarios(): Scenario[] {
  const base = {
    queues: ['fq'],
    worker: 'core' as const,
    cidShare: 0.5,
    bulkShare: 0.2,
    cancelShare: 0.005,
    drainTimeoutMs: 60_000,
    storeResults: true,
  };
  return [
    {
      ...base,
      id: 'kill9',
      title: 'kill -9 workers',
      jobs: scale(20_000, 3_000),
      rate: 1_000,
      queues: ['fa', 'fb'],
      redis: {},
      // A long lease: recovery must come from the heartbeat, not from lease expiry.
      queueOptions: {
        heartbeatTimeoutMs: 1_000,
        leaseMs: 10_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      behavior: (r) => (r() < 0.05 ? { b: 'work', ms: 50 + Math.floor(r() * 250) } : quickWork(r)),
      async inject(ctx) {
        while (ctx.producing) {
          await sleep(QUICK ? 500 + ctx.rand() * 1_000 : 1_000 + ctx.rand() * 2_000);
          if (!ctx.producing) break;
          const slot = ctx.readySlot();
          if (slot === undefined) continue;
          const k = await ctx.pool.kill9(slot);
          ctx.faults.push({ kind: 'kill9', at: k.at, end: k.at, pid: k.pid });
          ctx.watchLeases(k.workerIds, k.at, ctx.heartbeatTimeoutMs());
          ctx.pool.start(slot);
        }
      },
      deadOk: leaseExpiryExplained(['kill9']),
      recovery: 'SIGKILL → re-run of each job it held',
      bystanders: { exclude: [] },
      assertBystanders: true,
    },
    {
      ...base,
      id: 'redis-always',
      title: 'Redis kill -9 + restart, AOF always',
      jobs: scale(8_000, 2_000),
      rate: 600,
      redis: { appendonly: true, appendfsync: 'always' },
      cidShare: 0.8,
      cancelShare: 0,
      queueOptions: {
        heartbeatTimeoutMs: 3_000,
        leaseMs: 5_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      behavior: quickWork,
      inject: (ctx) => restartRedisLoop(ctx),
      deadOk: leaseExpiryExplained(['redis-kill']),
      recovery: 'Redis SIGKILL → next completion',
      assertNoDupAdds: true,
      // Not asserted here: no re-run after a handler ended, no live worker judged dead. These
      // workers' client keeps ioredis' own options, whose ready check waits out a loading Redis'
      // estimate (up to 10 s): a complete can then miss its 5 s lease, a heartbeat its timeout.
      // The Nest scenarios (RECONNECT_OPTIONS) assert both.
    },
    {
      ...base,
      id: 'redis-everysec',
      title: 'Redis kill -9 + restart, AOF everysec (report)',
      reportOnly: true,
      jobs: scale(5_000, 1_500),
      rate: 600,
      redis: { appendonly: true, appendfsync: 'everysec' },
      cidShare: 0.8,
      cancelShare: 0,
      queueOptions: {
        heartbeatTimeoutMs: 3_000,
        leaseMs: 5_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      behavior: quickWork,
      inject: (ctx) => restartRedisLoop(ctx),
      deadOk: leaseExpiryExplained(['redis-kill']),
      recovery: 'Redis SIGKILL → next completion',
    },
    {
      ...base,
      id: 'connections',
      title: 'CLIENT KILL normal/pubsub/id + CLIENT PAUSE 1.5 s',
      jobs: scale(8_000, 2_000),
      rate: 600,
      redis: {},
      cidShare: 0.7,
      queueOptions: {
        heartbeatTimeoutMs: 1_000,
        leaseMs: 1_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      // Some jobs run across a pause: their leases expire meanwhile (renewals are held too).
      behavior: (r) =>
        r() < 0.05 ? { b: 'work', ms: 100 + Math.floor(r() * 1_400) } : quickWork(r),
      async inject(ctx) {
        const duration = (this.jobs / this.rate) * 1_000;
        const pauses = [ctx.startedAt + duration / 3, ctx.startedAt + (2 * duration) / 3];
        while (ctx.producing) {
          await sleep(300 + ctx.rand() * 600);
          if (!ctx.producing) break;
          if (pauses.length > 0 && Date.now() >= pauses[0]!) {
            pauses.shift();
            const at = Date.now();
            ctx.faults.push({
              kind: 'pause',
              at,
              back: at + 1_500,
              end: at + 1_500 + RECONNECT_MS,
            });
            await ctx.admin.client('PAUSE', 1_500, 'ALL');
            await sleep(1_600);
            continue;
          }
          const roll = ctx.rand();
          const at = Date.now();
          if (roll < 0.4) {
            await ctx.clientKill('normal');
          } else if (roll < 0.7) {
            await ctx.clientKill('pubsub');
          } else {
            const list = String(await ctx.admin.client('LIST'));
            const me = String(await ctx.admin.client('ID'));
            const ids = [...list.matchAll(/^id=(\d+) /gm)]
              .map((m) => m[1]!)
              .filter((i) => i !== me);
            const victim = ids[Math.floor(ctx.rand() * ids.length)];
            if (victim) {
              await ctx.admin.call('CLIENT', 'KILL', 'ID', victim).catch(() => 0);
              ctx.faults.push({ kind: 'client-kill-id', at, back: at, end: at + RECONNECT_MS });
            }
          }
        }
      },
      deadOk: leaseExpiryExplained(['pause', 'client-kill-normal', 'client-kill-id']),
      recovery: 'kill/pause → next completion',
      assertNoDupAdds: true,
    },
    {
      ...base,
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
        const runs = (b: Behavior) =>
          logs.execs.filter((e) => kinds.get(`${e.queue}\t${e.id}`) === b);
        const done = (b: Behavior) =>
          logs.dones.filter((d) => kinds.get(`${d.queue}\t${d.id}`) === b);
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
    },
    {
      ...base,
      id: 'shutdown',
      title: 'SIGTERM to Nest app workers (graceful shutdown)',
      storeResults: false,
      jobs: scale(6_000, 1_500),
      rate: 300,
      worker: 'nest',
      redis: {},
      queueOptions: {
        heartbeatTimeoutMs: 1_000,
        leaseMs: 5_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY },
      shutdownTimeoutMs: 300,
      behavior: (r) => (r() < 0.1 ? { b: 'work', ms: 200 + Math.floor(r() * 600) } : quickWork(r)),
      async inject(ctx) {
        while (ctx.producing) {
          await sleep(QUICK ? 700 + ctx.rand() * 1_000 : 1_500 + ctx.rand() * 2_000);
          if (!ctx.producing) break;
          const slot = ctx.readySlot();
          if (slot === undefined) continue;
          const r = await ctx.pool.sigterm(slot);
          ctx.faults.push({ kind: 'sigterm', at: r.at, end: r.exitedAt, pid: r.pid });
          ctx.shutdowns.push(r.exitedAt - r.at);
          if (r.signal !== 'SIGTERM' && r.code !== 0)
            ctx.violation(`Nest app ${r.pid} exited with ${r.code ?? r.signal} on SIGTERM`);
          ctx.watchLeases(r.workerIds, r.exitedAt, 0);
          ctx.pool.start(slot);
        }
      },
      deadOk: () => null,
      recovery:
        'SIGTERM → re-run of each released job (front of its priority: lower priorities wait for the backlog)',
      async finalChecks(ctx) {
        if (ctx.cleanTotals.deadWorkers > 0)
          ctx.violation(`${ctx.cleanTotals.deadWorkers} worker(s) reclaimed as dead`);
        if (ctx.cleanTotals.reclaimed > 0)
          ctx.violation(`${ctx.cleanTotals.reclaimed} lease(s) expired`);
        ctx.note(
          `${ctx.shutdowns.length} graceful shutdowns, SIGTERM → exit p50 ${fmt(quantile(ctx.shutdowns, 0.5))} max ${fmt(Math.max(...ctx.shutdowns))} (shutdownTimeoutMs 300)`,
        );
      },
    },
    ...issue12Scenarios(base),
    ...issue24Scenarios(base),
    ...flowScenarios(base),
  ];
}
