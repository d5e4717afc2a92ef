/**
 * Issue 24's scenarios (run by run.ts with the others), both on Nest worker apps with the
 * module's and the core's defaults only (the module's own cleaner cleans):
 * - `client-kill-completing`: `CLIENT KILL TYPE normal` every 2 s while jobs finish: no job runs
 *   again after a handler of the same attempt ended (a complete whose reply was lost is re-sent,
 *   never given back: guarantee 11);
 * - `redis-defaults`: redis-server SIGKILLed and restarted on its address 3 times (AOF `always`):
 *   the first job after Redis is back starts within 300 ms p50, 1 s at most (`assertResume`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CONCURRENCY, leaseExpiryExplained, quickWork, scale } from '../common.js';
import type { Scenario } from '../ctx.js';
import { restartRedisLoop } from './restarts.js';

type Base = Pick<
  Scenario,
  'queues' | 'worker' | 'cidShare' | 'bulkShare' | 'cancelShare' | 'drainTimeoutMs' | 'storeResults'
>;

/** What both scenarios share: Nest apps on defaults only. */
const defaults = {
  worker: 'nest',
  redis: {},
  queueOptions: {},
  workerOptions: { concurrency: CONCURRENCY },
  shutdownTimeoutMs: 'default',
  cleaner: 'module',
  drainTimeoutMs: 90_000,
  assertLiveWorkers: true,
} satisfies Partial<Scenario>;

export function issue24Scenarios(base: Base): Scenario[] {
  return [
    {
      ...base,
      ...defaults,
      id: 'client-kill-completing',
      title:
        'CLIENT KILL TYPE normal every 2 s, Nest apps on defaults: no re-run after a handler ended',
      jobs: scale(5_000, 1_500),
      rate: scale(5_000 / 60, 1_500 / 20),
      queues: ['fc'],
      cidShare: 0.7,
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
      assertNoRerunAfterEnd: true,
      assertNoDupAdds: true,
    },
    {
      ...base,
      ...defaults,
      id: 'redis-defaults',
      title: 'Redis kill -9 + restart ×3 (AOF always), Nest apps on defaults: resume',
      jobs: scale(2_500, 1_200),
      rate: scale(100, 80),
      queues: ['fr'],
      redis: { appendonly: true, appendfsync: 'always' },
      cidShare: 0.8,
      cancelShare: 0,
      behavior: quickWork,
      inject: (ctx) => restartRedisLoop(ctx, 3),
      deadOk: leaseExpiryExplained(['redis-kill']),
      recovery: 'Redis SIGKILL → next completion',
      assertResume: true,
      assertNoDupAdds: true,
    },
  ];
}
