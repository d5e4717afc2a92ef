/** The dead-letter set: list a page, requeue one, purge one or all (see dead_letters.lua). */
import { errorMessage, invalid } from '../errors.js';
import type { DeadJob } from '../types/index.js';
import { decode, type Raw } from '../job/codec.js';
import { isPosInt } from '../util/checks.js';
import { type QueueContext } from './context.js';
import { num, parseMeta, str, type Reply } from '../job/records.js';
import { CLEAN_LIMIT } from './admin.js';

export class DeadLetters<T> {
  constructor(private readonly ctx: QueueContext) {}

  async list(opts: { offset?: number; limit?: number } = {}): Promise<DeadJob<T>[]> {
    const offset = opts.offset ?? 0;
    const limit = opts.limit ?? 100;
    if (!Number.isInteger(offset) || offset < 0 || !isPosInt(limit) || limit > 10_000) {
      throw invalid(['listDead: offset must be an integer >= 0 and limit 1..10000']);
    }
    // flat: id, payload, meta, died ms (oldest first)
    const r = (await this.ctx.run('dead_letters', ['list', offset, limit], {
      buffers: true,
    })) as Reply;
    const out: DeadJob<T>[] = [];
    for (let i = 0; i < r.length; i += 4) {
      const meta = parseMeta(str(r[i + 2]));
      const job: DeadJob<T> = {
        id: meta.i ?? str(r[i]),
        name: meta.n,
        reason: meta.r ?? '',
        lastError: meta.e,
        attemptsMade: meta.a ?? 0,
        diedAt: num(r[i + 3]),
      };
      if (meta.g !== undefined) job.group = meta.g;
      try {
        job.data = decode<T>(this.ctx.options, r[i + 1] as Raw);
      } catch (e) {
        job.decodeError = errorMessage(e);
      }
      out.push(job);
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
