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
          // Dead workers are judged only while beats land (lib/scripts/lib/reclaim.lua, lapsed):
          // not within a heartbeat timeout after a silence of every worker ('s': all dead at
          // once, or Redis away), nor while no worker's beat landed for half a timeout (a loaded
          // machine's starved heartbeat threads: the first clean() to see it judges nobody).
          // A round is checked when both held for sure: 's' read after it (it only grows), the
          // last beat read before it (a beat meanwhile only brings it closer).
          const lastBeat = Number(await client.hget(q.keys.heartbeatRecord, 'b')) || 0;
          const r = await q.clean();
          const roundEnd = Date.now();
          const silenceEnd = Number(await client.hget(q.keys.heartbeatRecord, 's')) || 0;
          const hb = ctx.heartbeatTimeoutMs();
          const judging = silenceEnd + hb + 5 <= roundStart && roundEnd - lastBeat <= hb / 2;
          for (const check of ctx.leaseChecks.filter(
            (c) => c.queue === q.name && c.from <= roundStart && judging,
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
