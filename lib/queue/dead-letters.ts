/** The dead-letter set: list a page, requeue one, purge one or all (see dead_letters.lua). */
import { invalid } from '../errors.js';
import type { DeadJob } from '../types/index.js';
import type { Raw } from '../job/codec.js';
import { pageOf } from '../util/checks.js';
import { type QueueContext } from './context.js';
import { str, type Reply } from '../job/records.js';
import { deadView } from '../job/views.js';
import { CLEAN_LIMIT } from './admin.js';

export class DeadLetters<T> {
  constructor(private readonly ctx: QueueContext) {}

  async list(opts: { offset?: number; limit?: number } = {}): Promise<DeadJob<T>[]> {
    const problems: string[] = [];
    const { offset, limit } = pageOf(opts, 10_000, problems);
    if (problems.length) throw invalid(problems, `${this.ctx.name}: listDead refused`);
    // flat: seq, payload, meta, died ms, added ms, started ms (oldest first)
    const r = (await this.ctx.run('dead_letters', ['list', offset, limit], {
      buffers: true,
    })) as Reply;
    const out: DeadJob<T>[] = [];
    for (let i = 0; i + 5 < r.length; i += 6) {
      const [seq, raw, meta, died, added, started] = r.slice(i, i + 6);
      out.push(deadView<T>(this.ctx, str(seq), raw as Raw, str(meta), died!, added!, started!));
    }
    return out;
  }

  async retry(id: string): Promise<boolean> {
    this.ctx.checkId(id);
    return (await this.ctx.run('dead_letters', ['retry', id])) === 1;
  }

  async purge(id?: string): Promise<number> {
    if (id !== undefined) {
      this.ctx.checkId(id);
      return (await this.ctx.run('dead_letters', ['purge', id])) as number;
    }
    let total = 0;
    for (;;) {
      const n = (await this.ctx.run('dead_letters', ['purgeall', CLEAN_LIMIT])) as number;
      total += n;
      if (n < CLEAN_LIMIT) return total;
    }
  }
}
