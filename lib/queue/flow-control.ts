/**
 * Flow control of the whole queue, stored in Redis (see flow_control.lua): pause/resume, rate limit,
 * global concurrency, and a handler's `RateLimitError` (rate_limited.lua).
 */
import { invalid } from '../errors.js';
import { checkRateLimit } from '../options.js';
import type { FlowState, Lease, RateLimit } from '../types/index.js';
import { isPosInt, shown } from '../util/checks.js';
import { type QueueContext, type ScriptArgs } from './context.js';

/** Longest pause a `RateLimitError` may ask for (one day). */
const MAX_RATE_LIMITED_MS = 24 * 3600_000;

export class Flow {
  constructor(private readonly ctx: QueueContext) {}

  async pause(): Promise<void> {
    await this.ctx.run('flow_control', ['pause']);
  }

  async resume(): Promise<void> {
    await this.ctx.run('flow_control', ['resume']);
  }

  async state(): Promise<FlowState> {
    // { paused version, rate max, rate dur, concurrency, no leases until }
    const [p, max, dur, c, u] = (await this.ctx.run('flow_control', ['get'])) as number[];
    return {
      paused: p! > 0,
      rateLimit: max! > 0 ? { max: max!, durationMs: dur! } : null,
      globalConcurrency: c! > 0 ? c! : null,
      rateLimitedUntil: u!,
    };
  }

  async setRateLimit(limit: RateLimit | null): Promise<void> {
    if (limit === null) {
      await this.ctx.run('flow_control', ['rate', 0, 0]);
      return;
    }
    const problems: string[] = [];
    checkRateLimit('rate limit', limit, problems);
    if (problems.length) throw invalid(problems, `${this.ctx.name}: setRateLimit refused`);
    await this.ctx.run('flow_control', ['rate', limit.max, limit.durationMs]);
  }

  async setGlobalConcurrency(n: number | null): Promise<void> {
    if (n !== null && (!isPosInt(n) || n > 1_000_000)) {
      throw invalid(
        [`global concurrency must be an integer 1..1000000 or null, got ${shown(n)}`],
        `${this.ctx.name}: setGlobalConcurrency refused`,
      );
    }
    await this.ctx.run('flow_control', ['conc', n ?? 0]);
  }

  /**
   * Give a leased job back to the front (no attempt counted) and stop the queue's leasing for
   * `ms`. `held`: leases of the same worker not started yet that the limit holds (its prefetched
   * jobs of the job's group, or all of them): they go back to the front first, in their order,
   * in the same script (no lease takes them in between). Resolves until when (Redis ms), or -1
   * when the lease was lost (the held ones went back all the same).
   */
  async rateLimited(lease: Lease, ms: number, held: readonly Lease[] = []): Promise<number> {
    this.ctx.checkLease(lease);
    if (!isPosInt(ms) || ms > MAX_RATE_LIMITED_MS) {
      throw invalid([`rate limited ms must be an integer 1..${MAX_RATE_LIMITED_MS}, got ${ms}`]);
    }
    const { seq, token, workerId } = lease;
    const args: ScriptArgs['rate_limited'] = [seq, token, workerId, ms, held.length];
    for (const h of held) {
      this.ctx.checkLease(h);
      if (h.workerId !== workerId) throw invalid(['held leases must be of the same worker']);
      args.push(h.seq, h.token);
    }
    return (await this.ctx.run('rate_limited', args, { workerId })) as number;
  }
}
