/**
 * Adding jobs: checked and encoded first (one bad job refuses the batch, nothing written), then
 * one add script per 2,000 jobs. Every add call is idempotent (see add.lua): this producer's
 * session and a sequence number name it, so a call re-sent after a lost reply adds nothing twice.
 */
import { randomBytes } from 'node:crypto';
import { invalid } from '../errors.js';
import type { AddOptions, AddResult } from '../types.js';
import { AddProblems, prepareAdd, type AddValues } from './add-options.js';
import type { Arg, QueueContext } from './context.js';
import { str, num, type Reply } from './records.js';
import { ReplicaAcks } from './replica-acks.js';

const ADD_CHUNK = 2000;
/** Add calls whose records one add call deletes at most (the rest go with the next). */
const MAX_ACKS_PER_ADD = 1000;

export class Producer {
  /** This producer's add calls: a session id and a counter. */
  private readonly session = randomBytes(8).toString('base64url');
  private seq = 0;
  /** Add calls whose replies arrived since the last add call (their records can go). */
  private acked: number[] = [];
  private readonly replicated: ReplicaAcks;

  constructor(private readonly ctx: QueueContext) {
    this.replicated = new ReplicaAcks(ctx);
  }

  /** `traceContext`: an add hook's, stored with each job (see lib/hooks.ts). */
  async addBulk(
    jobs: ReadonlyArray<{ data: unknown; opts?: AddOptions }>,
    traceContext?: string,
  ): Promise<AddResult[]> {
    const title = `${this.ctx.name}: add refused`;
    if (!Array.isArray(jobs)) throw invalid(['addBulk takes an array of { data, opts? }'], title);
    const problems = new AddProblems();
    const encoded: AddValues[] = [];
    jobs.forEach((j: unknown, i) => {
      const at = jobs.length > 1 ? `job ${i}: ` : '';
      if (typeof j !== 'object' || j === null) {
        problems.push(`${at}must be an object { data, opts? }`);
        return;
      }
      const job = j as { data: unknown; opts?: AddOptions };
      const o = this.ctx.options;
      const values = prepareAdd(o, job.data, job.opts ?? {}, at, problems, traceContext);
      if (values) encoded.push(values);
    });
    if (problems.list.length > 0) throw problems.error(title);
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < encoded.length; i += ADD_CHUNK) {
      const chunk = encoded.length <= ADD_CHUNK ? encoded : encoded.slice(i, i + ADD_CHUNK);
      const seq = ++this.seq;
      calls.push(this.send(chunk, seq).then((reply) => (this.acked.push(seq), reply)));
    }
    const out: AddResult[] = [];
    for (const reply of (await Promise.all(calls)) as Reply[]) {
      for (let i = 0; i < reply.length; i += 2) {
        out.push({ id: str(reply[i]), added: num(reply[i + 1]) === 1 });
      }
    }
    return out;
  }

  /**
   * One add script: ARGV = the priorities this chunk uses (digits; their pending lists are its
   * last KEYS), hand-off lease ms, job count, call seq, record ttl, acknowledged seqs, then each
   * job's five values.
   */
  private send(chunk: readonly AddValues[], seq: number): Promise<unknown> {
    let used = 0;
    for (const job of chunk) used |= 1 << job[3];
    let digits = '';
    for (let p = 0; p <= 9; p++) if (used & (1 << p)) digits += p;
    const acked = this.acked.splice(0, MAX_ACKS_PER_ADD);
    const o = this.ctx.options;
    const args: Arg[] = [digits, o.leaseMs, chunk.length, seq];
    // Records outlive any re-send of a call that resolved (within commandTimeoutMs).
    args.push(Math.max(60_000, 4 * o.commandTimeoutMs), acked.length, ...acked);
    for (const job of chunk) for (const v of job) args.push(v);
    const owner = { session: this.session, pending: digits };
    if (o.replicaAcks > 0) {
      return this.replicated.add([...this.ctx.scriptKeys.of('add', owner), ...args]);
    }
    return this.ctx.run('add', args, owner);
  }
}
