/**
 * The core fault scenarios (`slow` is in slow.ts, issue 12's are in issue12.ts, issue 24's in
 * issue24.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { quantile } from '../analyze.js';
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
import { slowHandlers } from './slow.js';

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
    { ...base, ...slowHandlers },
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
