/**
 * Group administration (docs/groups.md; group_admin.lua): pause and resume one group, its own
 * concurrency and rate limit, the page of groups, draining a group's pending jobs.
 */
import { invalid } from '../errors.js';
import { checkGroupConcurrency, checkGroupName, checkRateLimit } from '../options.js';
import type { GroupInfo, RateLimit } from '../types/index.js';
import { pageOf } from '../util/checks.js';
import { num, str, type Reply } from '../job/records.js';
import { type QueueContext } from './context.js';
import { flushQuietly, type FlowDelivery } from './flows/delivery.js';
import { PAGE } from './listings.js';

export class Groups {
  constructor(
    private readonly ctx: QueueContext,
    private readonly flows: FlowDelivery,
  ) {}

  /** Refuse a bad group name (and what else `more` finds), every problem listed. */
  private check(op: string, group: unknown, more?: (problems: string[]) => void): void {
    const problems: string[] = [];
    checkGroupName('group', group, problems);
    more?.(problems);
    if (problems.length) throw invalid(problems, `${this.ctx.name}: ${op} refused`);
  }

  async pause(group: string): Promise<void> {
    this.check('pauseGroup', group);
    await this.ctx.run('group_admin', ['pause', group]);
  }

  async resume(group: string): Promise<void> {
    this.check('resumeGroup', group);
    await this.ctx.run('group_admin', ['resume', group]);
  }

  async setConcurrency(group: string, n: number | null): Promise<void> {
    this.check('setGroupConcurrency', group, (p) => {
      if (n !== null) checkGroupConcurrency('concurrency', n, p);
    });
    await this.ctx.run('group_admin', ['conc', group, n ?? 0]);
  }

  async setRateLimit(group: string, limit: RateLimit | null): Promise<void> {
    this.check('setGroupRateLimit', group, (p) => {
      if (limit !== null) checkRateLimit('rate limit', limit, p);
    });
    await this.ctx.run('group_admin', ['rate', group, limit?.max ?? 0, limit?.durationMs ?? 0]);
  }

  async list(opts: { offset?: number; limit?: number } = {}): Promise<GroupInfo[]> {
    const problems: string[] = [];
    const { offset, limit } = pageOf(opts, PAGE, problems);
    if (problems.length) throw invalid(problems, `${this.ctx.name}: getGroups refused`);
    // flat: group, pending, running, paused 1|0, held until ms (0: not held)
    const r = (await this.ctx.run('group_admin', ['list', offset, limit])) as Reply;
    const out: GroupInfo[] = [];
    for (let i = 0; i + 4 < r.length; i += 5) {
      out.push({
        group: str(r[i]),
        pending: num(r[i + 1]),
        running: num(r[i + 2]),
        paused: num(r[i + 3]) === 1,
        limited: num(r[i + 4]) > 0,
      });
    }
    return out;
  }

  async drain(group: string): Promise<number> {
    this.check('drainGroup', group);
    let total = 0;
    for (;;) {
      // { removed, entries looked at, 10 when flow jobs were removed }
      const [removed, seen, flow] = (await this.ctx.run('group_admin', [
        'drain',
        group,
        PAGE,
      ])) as number[];
      total += removed!;
      // Drained flow children: their parents learn it (docs/flows.md).
      if (flow! > 0) await flushQuietly(this.flows, this.ctx, 'now');
      if (seen! < PAGE) return total;
    }
  }
}
