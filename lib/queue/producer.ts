/**
 * Adding jobs: checked and encoded first (one bad job refuses the batch, nothing written), then
 * one add script per 2,000 jobs. Every add call is idempotent (see add.lua): this producer's
 * session and a sequence number name it, so a call re-sent after a lost reply adds nothing twice.
 * Single adds group-commit: while one add script of them is in flight, the next ones wait and go
 * together in the next script (each caller gets its own result; a script's error is all of theirs).
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

/** A single add waiting for the next group script. */
interface Waiting {
  values: AddValues;
  resolve: (r: AddResult) => void;
  reject: (e: unknown) => void;
}

const result = (reply: Reply, i: number): AddResult => {
  const flag = num(reply[i + 1]);
  return flag === 2
    ? { id: str(reply[i]), added: false, replaced: true }
    : { id: str(reply[i]), added: flag === 1 };
};

export class Producer {
  /** Single adds waiting for the group script in flight to finish. */
  private waiting: Waiting[] = [];
  private grouping = false;
  /** This producer's add calls: a session id and a counter. */
  private readonly session = randomBytes(8).toString('base64url');
  private seq = 0;
  /** Add calls whose replies arrived since the last add call (their records can go). */
  private acked: number[] = [];
  private readonly replicated: ReplicaAcks;

  constructor(private readonly ctx: QueueContext) {
    this.replicated = new ReplicaAcks(ctx);
  }

  /** One job: checked now (its own error), then sent alone or with the adds that wait with it. */
  add(data: unknown, opts: AddOptions | undefined, traceContext?: string): Promise<AddResult> {
    const problems = new AddProblems();
    const values = prepareAdd(this.ctx.options, data, opts ?? {}, '', problems, traceContext);
    if (!values) return Promise.reject(problems.error(`${this.ctx.name}: add refused`));
    return new Promise<AddResult>((resolve, reject) => {
      this.waiting.push({ values, resolve, reject });
      if (!this.grouping) this.group();
    });
  }

  /** Send the waiting single adds (up to a chunk) as one script; the next group when it ends. */
  private group(): void {
    const batch =
      this.waiting.length <= ADD_CHUNK ? this.waiting : this.waiting.slice(0, ADD_CHUNK);
    this.waiting = this.waiting.length <= ADD_CHUNK ? [] : this.waiting.slice(ADD_CHUNK);
    this.grouping = true;
    const seq = ++this.seq;
    const settle = (): void => {
      this.grouping = false;
      if (this.waiting.length > 0) this.group();
    };
    let sent: Promise<unknown>;
    try {
      sent = this.send(
        batch.map((w) => w.values),
        seq,
      );
    } catch (e) {
      sent = Promise.reject(e);
    }
    sent.then(
      (r) => {
        this.acked.push(seq);
        const reply = r as Reply;
        batch.forEach((w, i) => w.resolve(result(reply, i * 2)));
        settle();
      },
      (e: unknown) => {
        for (const w of batch) w.reject(e);
        settle();
      },
    );
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
      for (let i = 0; i < reply.length; i += 2) out.push(result(reply, i));
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
