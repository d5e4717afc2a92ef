/**
 * The orchestrator's cleaner (run.ts): `clean()` every CLEAN_INTERVAL_MS on every queue, checking
 * after each round that the dead workers due by then hold nothing (ctx.leaseChecks).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { WorkQueue } from '../../lib/index.js';
import { CLEAN_INTERVAL_MS } from './common.js';
import { heldBy, type Ctx } from './ctx.js';

export function startCleaner(ctx: Ctx): { stop(): Promise<void> } {
  const client = new Redis(ctx.redis.url);
  client.on('error', () => undefined);
  const queues = ctx.s.queues.map((name) => new WorkQueue(client, name, ctx.queueOpts()));
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const q of queues) {
        const roundStart = Date.now();
        try {
          // When no worker's beat landed for a heartbeat timeout (every worker dead at once, or
          // Redis away), the registry judges heartbeats again only from then on (the record's 's',
          // lib/scripts/lib/reclaim.lua): a dead worker is due a timeout after that too.
          const judgedFrom = Number(await client.hget(q.keys.heartbeatRecord, 's')) || 0;
          const dueFrom = Math.max(0, judgedFrom + ctx.heartbeatTimeoutMs() + 5);
          const r = await q.clean();
          for (const check of ctx.leaseChecks.filter(
            (c) => c.queue === q.name && c.from <= roundStart && dueFrom <= roundStart,
          )) {
            ctx.leaseChecks.splice(ctx.leaseChecks.indexOf(check), 1);
            const held = await heldBy(client, q, check.workerIds);
            if (held > 0)
              ctx.violation(
                `${q.name}: ${held} lease(s)/entries of dead worker(s) ${check.workerIds.join(',')} left after the first clean() past their heartbeat timeout`,
              );
          }
          const t = ctx.cleanTotals;
          t.rounds += 1;
          t.reclaimed += r.reclaimed;
          t.deadWorkers += r.deadWorkers;
          t.reclaimedFromWorkers += r.reclaimedFromWorkers;
          t.deadLettered += r.deadLettered;
        } catch {
          ctx.cleanTotals.errors += 1;
        }
      }
      await sleep(CLEAN_INTERVAL_MS);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      client.disconnect();
    },
  };
}
