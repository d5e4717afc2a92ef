/**
 * Paged listings and job administration: list a state a page at a time, promote a delayed job,
 * change a job's priority, retry every dead job, drain and obliterate — each page one script.
 */
import type { Cluster, Redis } from 'ioredis';
import { invalid, redisError, WorkQueueError } from '../errors.js';
import type { JobInfo, ListState, PageOptions } from '../types/index.js';
import { pageOf, shown } from '../util/checks.js';
import { checkGroupName } from '../options.js';
import { type QueueContext, type ScriptArgs } from './context.js';
import { bounded } from '../redis/bounded.js';
import { num, parseMeta, str, type Raw, type Reply } from '../job/records.js';
import { jobView } from '../job/views.js';
import { readManyChildCounts } from './flows/children.js';
import { flushQuietly, type FlowDelivery } from './flows/delivery.js';
import { detachFlows } from './flows/obliterate.js';

/** Most entries one script call touches (drain, obliterate, retry all); getJobs' largest page. */
export const PAGE = 1000;
const STATES: readonly ListState[] = [
  'pending',
  'delayed',
  'leased',
  'dead',
  'waiting-children',
  'completed',
];
/** BullMQ's job states, and ours for them. */
const BULLMQ_STATES = new Map<unknown, ListState>([
  ['waiting', 'pending'],
  ['wait', 'pending'],
  ['prioritized', 'pending'],
  ['paused', 'pending'],
  ['active', 'leased'],
  ['failed', 'dead'],
]);

export class Listings<T, R> {
  constructor(
    private readonly ctx: QueueContext,
    private readonly flows: FlowDelivery,
  ) {}

  async getJobs(state: ListState, opts: PageOptions = {}): Promise<JobInfo<T, R>[]> {
    const o: PageOptions = typeof opts === 'object' && opts !== null ? opts : {};
    const problems: string[] = [];
    if (!STATES.includes(state)) {
      const ours = BULLMQ_STATES.get(state);
      const hint = Array.isArray(state)
        ? " (one state per call: BullMQ's getJobs(types[]) is a call per state here)"
        : ours
          ? ` (BullMQ's ${state} is ${ours} here)`
          : '';
      problems.push(`state must be one of ${STATES.join(', ')}, got ${shown(state)}${hint}`);
    }
    const { offset, limit } = pageOf(opts, PAGE, problems, ['offset', 'limit', 'group']);
    if (o.group !== undefined) {
      checkGroupName('group', o.group, problems);
      if (state !== 'pending') problems.push(`group lists pending jobs only, not ${state}`);
    }
    if (problems.length) throw invalid(problems, `${this.ctx.name}: getJobs refused`);
    // flat: seq, payload, meta, score, progress, added, started, holder
    const args: ScriptArgs['list_jobs'] = [state, offset, limit];
    if (o.group !== undefined) args.push(o.group);
    const r = (await this.ctx.run('list_jobs', args, { buffers: true })) as Reply;
    const out: JobInfo<T, R>[] = [];
    const parents: Array<[JobInfo<T, R>, string]> = [];
    for (let i = 0; i + 7 < r.length; i += 8) {
      const rawMeta = str(r[i + 2]);
      out.push(
        jobView<T, R>(this.ctx, {
          id: parseMeta(rawMeta).i ?? str(r[i]),
          state,
          raw: r[i + 1] as Raw,
          rawMeta,
          score: r[i + 3]!,
          prog: r[i + 4]!,
          added: r[i + 5]!,
          started: r[i + 6]!,
          holder: r[i + 7]!,
        }),
      );
      // A kept completed parent's children went when it ended: none left to count.
      if (state !== 'completed' && rawMeta.includes('"W":')) parents.push([out.at(-1)!, str(r[i])]);
    }
    // Flow parents: how far their children are.
    const seqs = parents.map(([, seq]) => seq);
    const counts = await readManyChildCounts(this.flows.runner, this.ctx.name, seqs);
    parents.forEach(([info], j) => (info.children = counts[j]));
    return out;
  }

  async promote(id: string): Promise<boolean> {
    this.ctx.checkId(id);
    return (await this.ctx.run('promote', [id])) === 1;
  }

  async changePriority(id: string, priority: number): Promise<boolean> {
    const problems: string[] = [];
    this.ctx.checkId(id, problems);
    if (!Number.isInteger(priority) || priority < 0 || priority > 9)
      problems.push(`priority must be an integer 0..9, got ${shown(priority)}`);
    if (problems.length) throw invalid(problems, `${this.ctx.name}: changePriority refused`);
    return (await this.ctx.run('change_priority', [id, priority])) === 1;
  }

  async retryAllDead(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = (await this.ctx.run('dead_letters', ['retryall', PAGE])) as number;
      total += n;
      if (n < PAGE) return total;
    }
  }

  async drain(delayed: boolean): Promise<number> {
    let total = 0;
    let after = '';
    for (;;) {
      // { removed, entries looked at, where to go on in the groups ('' = start again),
      //   1 when flow jobs were removed }
      const r = (await this.ctx.run('drain', [PAGE, delayed ? 1 : 0, after])) as Reply;
      total += num(r[0]);
      after = str(r[2]);
      // Drained flow children: their parents learn it (docs/flows.md).
      if (num(r[3]) > 0) await flushQuietly(this.flows, this.ctx, 'now');
      if (num(r[1]) < PAGE && after === '') return total;
    }
  }

  async obliterate(force: boolean): Promise<void> {
    const o = this.ctx.options;
    // Flow jobs end first, as if cancelled (docs/flows.md): only once obliterate may go on.
    const live = ((await this.ctx.run('counts', [o.heartbeatTimeoutMs, 0])) as number[])[13]!;
    if (!force && live > 0) throw this.refused(live);
    // Once flow jobs were detached (their children in other queues cancelled), obliterate goes on
    // even if a worker registered since the check above: a refusal now would leave this queue's
    // flow jobs half-ended (a parent in no list).
    if (await detachFlows(this.flows, this.ctx.name)) force = true;
    for (;;) {
      // { -1, live workers } refused, or { 0, elements removed }
      const [code, n] = (await this.ctx.run('obliterate', [
        force ? 1 : 0,
        o.heartbeatTimeoutMs,
        PAGE,
      ])) as number[];
      if (code === -1) throw this.refused(n!);
      if (n! < PAGE) break;
      force = true; // checked once, before anything was removed
    }
    // What is left: per-worker and per-producer keys, cancel acknowledgements, the clean guard
    // (not the counters: a lease or a worker from before must match nothing after).
    const context = `queue ${this.ctx.name}: obliterate`;
    const c = this.ctx.client;
    const nodes: Redis[] =
      'nodes' in c && c.isCluster ? (c as Cluster).nodes('master') : [c as Redis];
    try {
      for (const node of nodes) await this.scanDelete(node, context);
    } catch (e) {
      throw redisError(context, e);
    }
  }

  private refused(live: number): WorkQueueError {
    return new WorkQueueError(
      'BAD_STATE',
      `queue ${this.ctx.name}: obliterate refused: ${live} live worker(s) (close them, or pass { force: true })`,
    );
  }

  /** Delete the queue's keys left on one node, a SCAN page (of up to PAGE keys) per step. */
  private async scanDelete(node: Redis, context: string): Promise<void> {
    const k = this.ctx.keys;
    const pattern = k.base + '*';
    const kept = new Set([k.key('seqCounter'), k.key('tokenCounter'), k.key('workerIdCounter')]);
    const ms = this.ctx.options.commandTimeoutMs;
    let cursor = '0';
    do {
      const [next, found] = await bounded(node, ms, context, () =>
        node.scan(cursor, 'MATCH', pattern, 'COUNT', PAGE),
      );
      cursor = next;
      const keys = found.filter((key) => !kept.has(key));
      if (keys.length > 0) await bounded(node, ms, context, () => node.unlink(...keys));
    } while (cursor !== '0');
  }
}
