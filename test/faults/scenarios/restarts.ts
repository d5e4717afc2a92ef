/** Redis restarts while the producer adds (the `redis-*` scenarios). */
import { setTimeout as sleep } from 'node:timers/promises';
import { QUICK, RECONNECT_MS } from '../common.js';
import type { Ctx } from '../ctx.js';

/** SIGKILL and restart redis-server `max` times (default: 1 with --quick, else 4) while producing. */
export async function restartRedisLoop(ctx: Ctx, max = QUICK ? 1 : 4): Promise<void> {
  let n = 0;
  while (ctx.producing && n < max) {
    await sleep(QUICK ? 800 : 2_000 + ctx.rand() * 1_500);
    if (!ctx.producing) break;
    n += 1;
    // What was held just before the kill (see metrics.ts, resume).
    const held = await ctx.held().catch(() => undefined);
    const at = Date.now();
    await ctx.redis.kill();
    ctx.redisKills.push(at);
    await sleep(ctx.rand() * 800);
    await ctx.redis.restart();
    const back = Date.now();
    ctx.faults.push({ kind: 'redis-kill', at, back, end: back + RECONNECT_MS, held });
    ctx.note(`redis kill #${n}: down ${Date.now() - at} ms`);
  }
}
