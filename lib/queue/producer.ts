/**
 * Adding jobs: checked and encoded first (one bad job refuses the batch, nothing written), then
 * one add script per 2,000 jobs or CALL_UNITS. Every add call is idempotent (see add.lua): its
 * producer's session and number name it, so a call re-sent after a lost reply adds nothing twice.
 * Single adds group-commit: those of one tick go together, in up to two scripts in flight; adds
 * made while both are out wait and go together in the next (each caller gets its own result; a
 * script's error is all of theirs).
 * Calls whose jobs all are plain (no caller id, no schedule, no group) go to the leaner
 * add_plain.lua.
 */
import { randomBytes } from 'node:crypto';
import { invalid } from '../errors.js';
import type { AddOptions, AddResult } from '../types/index.js';
import { AddProblems, isPlain, noOptions, partlyWritten, plainValues } from '../job/add-options.js';
import { prepareAdd, type AddValues } from '../job/add-options.js';
import type { QueueContext, RunOptions, ScriptArgs } from './context.js';
import { str, num, type Reply } from '../job/records.js';
import { ReplicaAcks } from './replica-acks.js';
import { callShare } from '../util/call-share.js';

const ADD_CHUNK = 2000;
const addUnits = (v: AddValues): number => v[1].length + v[2].length; // (payload, meta: callShare)
/** Add calls whose records one add call deletes at most (the rest go with the next). */
const MAX_ACKS_PER_ADD = 1000;
/**
 * Records of answered calls are deleted once this many wait: one HDEL every 16 calls, and the
 * hash stays a short listpack that each call's HGET and HSET scan.
 */
const ACK_BATCH = 16;
const NO_ACKS: number[] = [];
/** What a BullMQ addBulk entry's field is here. */
const ENTRY_HINTS: Readonly<Record<string, string>> = {
  name: " (BullMQ's { name, data, opts } is { data, opts: { name } } here)",
};
/** The priorities (digits) of each set of them (a bit per priority), made once. */
const DIGITS: (string | undefined)[] = [];
/**
 * Group scripts of single adds in flight at most. Two: an add made while one is out goes at once,
 * and one runs in Redis while the callers of the other add again. (64 callers, 2-core VM: 1, 2
 * and 3 measured alike within the noise; 1 spends the least CPU per job, 3 the most.)
 */
const GROUPS_IN_FLIGHT = 2;

const result = (reply: Reply, i: number): AddResult => {
  const flag = num(reply[i + 1]);
  return flag === 2
    ? { id: str(reply[i]), added: false, replaced: true }
    : { id: str(reply[i]), added: flag === 1 };
};

type Settle = (r: AddResult) => void;
type Fail = (e: unknown) => void;

export class Producer {
  /**
   * Single adds waiting to be sent (at the end of the tick, or when a group script ends): their
   * values and their callers' settle functions, at the same index (no object per add).
   */
  private waiting: AddValues[] = [];
  private resolvers: Settle[] = [];
  private rejecters: Fail[] = [];
  /** The executor of every single add's promise: one function, not a closure per add. */
  private readonly enqueue = (resolve: Settle, reject: Fail): void => {
    this.resolvers.push(resolve);
    this.rejecters.push(reject);
  };
  /** Group scripts in flight, and whether a flush is due at the end of this tick. */
  private inFlight = 0;
  private flushing = false;
  /** This producer's add calls: a session id, and the number of its last call. */
  private readonly session = randomBytes(8).toString('base64url');
  private lastCall = 0;
  /** Numbers of add calls whose replies arrived since the last add call (their records can go). */
  private acked: number[] = [];
  /**
   * When the reply of the last call that set the expiry of this session's call records arrived
   * (Date.now(); 0: none yet). Calls set it again once a twelfth of the records' ttl has passed
   * (see send), not every call.
   */
  private recordsKept = 0;
  private readonly replicated: ReplicaAcks;
  /** How add_plain.lua runs for this session (its keys made once). */
  private plainRun: RunOptions | undefined;

  constructor(private readonly ctx: QueueContext) {
    this.replicated = new ReplicaAcks(ctx);
  }

  /** One job: checked now (its own error), then sent alone or with the adds that wait with it. */
  add(data: unknown, opts: AddOptions | undefined, traceContext?: string): Promise<AddResult> {
    let values =
      traceContext === undefined && noOptions(opts)
        ? plainValues(this.ctx.options, data)
        : undefined;
    if (!values) {
      const problems = new AddProblems();
      values = prepareAdd(this.ctx.options, data, opts, '', problems, traceContext);
      if (!values) return Promise.reject(problems.error(`${this.ctx.name}: add refused`));
    }
    this.waiting.push(values);
    if (!this.flushing && this.inFlight < GROUPS_IN_FLIGHT) {
      this.flushing = true;
      queueMicrotask(this.flush);
    }
    return new Promise<AddResult>(this.enqueue);
  }

  /**
   * Send what waits, shared evenly by the free places in flight (so that one group runs while
   * the callers of another add again). Runs once the adds of this tick are in, or at once when
   * a group ends.
   */
  private readonly flush = (): void => {
    this.flushing = false;
    while (this.waiting.length > 0 && this.inFlight < GROUPS_IN_FLIGHT) {
      const share = Math.ceil(this.waiting.length / (GROUPS_IN_FLIGHT - this.inFlight));
      this.group(callShare(this.waiting, 0, Math.min(share, ADD_CHUNK), addUnits));
    }
  };

  /** Send the first `size` waiting single adds as one script. */
  private group(size: number): void {
    const all = size === this.waiting.length;
    const values = all ? this.waiting : this.waiting.slice(0, size);
    const resolvers = all ? this.resolvers : this.resolvers.slice(0, size);
    const rejecters = all ? this.rejecters : this.rejecters.slice(0, size);
    this.waiting = all ? [] : this.waiting.slice(size);
    this.resolvers = all ? [] : this.resolvers.slice(size);
    this.rejecters = all ? [] : this.rejecters.slice(size);
    this.inFlight++;
    const call = ++this.lastCall;
    const settle = (): void => {
      this.inFlight--;
      if (this.waiting.length > 0 && !this.flushing) this.flush();
    };
    let sent: Promise<unknown>;
    try {
      sent = this.send(values, call);
    } catch (e) {
      sent = Promise.reject(e);
    }
    sent.then(
      (reply) => {
        this.acked.push(call);
        const results = this.results(reply, size);
        for (let i = 0; i < size; i++) resolvers[i]!(results[i]!);
        settle();
      },
      (e: unknown) => {
        for (const reject of rejecters) reject(e);
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
    for (let i = 0, j: unknown; i < jobs.length; i++) {
      j = jobs[i];
      const at = jobs.length > 1 ? `job ${i}: ` : '';
      if (typeof j !== 'object' || j === null) {
        problems.push(`${at}must be an object { data, opts? }`);
        continue;
      }
      const job = j as { data: unknown; opts?: AddOptions };
      // An entry is { data, opts? }, nothing else (BullMQ's { name, data, opts } lost its name);
      // a hole of a sparse array is one too (forEach skipped them).
      for (const key in job) {
        if (key !== 'data' && key !== 'opts')
          problems.push(
            `${at}unknown field ${JSON.stringify(key)}${ENTRY_HINTS[key] ?? ''}; an entry is { data, opts? }`,
          );
      }
      const o = this.ctx.options;
      const values =
        (traceContext === undefined && noOptions(job.opts) && plainValues(o, job.data)) ||
        prepareAdd(o, job.data, job.opts, at, problems, traceContext, false);
      if (values) encoded.push(values);
    }
    if (problems.list.length > 0) throw problems.error(title);
    const calls: Promise<AddResult[]>[] = [];
    const starts: number[] = [];
    for (let i = 0; i < encoded.length;) {
      const n = callShare(encoded, i, ADD_CHUNK, addUnits);
      const chunk = n === encoded.length ? encoded : encoded.slice(i, i + n);
      const call = ++this.lastCall;
      const sent = this.send(chunk, call);
      calls.push(sent.then((reply) => (this.acked.push(call), this.results(reply, chunk.length))));
      starts.push(i);
      i += n;
    }
    if (calls.length === 1) return calls[0]!;
    const settled = await Promise.allSettled(calls);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw partlyWritten(failed.reason, settled, encoded.length, starts);
    const out: AddResult[] = [];
    for (const s of settled)
      for (const r of (s as PromiseFulfilledResult<AddResult[]>).value) out.push(r);
    return out;
  }

  /** The results of an add call of `count` jobs: add_plain's id base, or add's flat list. */
  private results(reply: unknown, count: number): AddResult[] {
    const out: AddResult[] = new Array<AddResult>(count);
    if (typeof reply === 'number') {
      for (let i = 0; i < count; i++) out[i] = { id: String(reply + i + 1), added: true };
    } else {
      for (let i = 0; i < count; i++) out[i] = result(reply as Reply, i * 2);
    }
    return out;
  }

  /**
   * One add script, add call number `call`: the priorities this chunk uses (digits; their
   * pending lists are its last KEYS), hand-off lease ms, job count, call number, record ttl, the
   * acknowledged calls, then each job's five values (add.lua), or its payload, meta and priority
   * when every job is plain (add_plain.lua; not behind replica acks, which send add.lua), or only
   * its payload when no plain job has meta (a job with a priority other than 5 has) and all
   * have one priority.
   */
  private send(chunk: readonly AddValues[], call: number): Promise<unknown> {
    const o = this.ctx.options;
    let used = 0;
    let plain = o.replicaAcks === 0;
    // No job has meta (then one priority: add_plain.lua takes their payloads alone).
    let bare = true;
    for (const job of chunk) {
      used |= 1 << job[3];
      if (plain && !isPlain(job)) plain = false;
      if (job[2] !== '') bare = false;
    }
    let digits = DIGITS[used];
    if (digits === undefined) {
      digits = '';
      for (let p = 0; p <= 9; p++) if (used & (1 << p)) digits += p;
      DIGITS[used] = digits;
    }
    const acked = this.acked.length >= ACK_BATCH ? this.acked.splice(0, MAX_ACKS_PER_ADD) : NO_ACKS;
    // Records outlive any re-send of a call that resolved (within commandTimeoutMs): the hash
    // is kept `ttl` more by every call until one is answered, then every ttl / 12 (a call runs
    // < ttl / 12 + 2 × commandTimeoutMs < ttl after the last call that kept it; a record lasts
    // ~ttl − ttl / 12 at least, and the hash of a producer that stopped goes within ttl).
    const ttl = Math.max(60_000, 4 * o.commandTimeoutMs);
    const keep = Date.now() - this.recordsKept >= ttl / 12;
    const args: ScriptArgs['add'] = [
      digits,
      o.leaseMs,
      chunk.length,
      call,
      keep ? ttl : 0,
      acked.length,
    ];
    for (const a of acked) args.push(a);
    if (plain && bare && digits.length === 1) {
      for (const job of chunk) args.push(job[1]);
    } else if (plain) {
      for (const job of chunk) args.push(job[1], job[2], job[3]);
    } else {
      for (const job of chunk) for (const v of job) args.push(v);
    }
    let sent: Promise<unknown>;
    if (plain) {
      // (add_plain names the pending lists itself: its keys are the same for every call.)
      this.plainRun ??= {
        session: this.session,
        op: 'add',
        keys: this.ctx.scriptKeys.of('add_plain', { session: this.session }),
      };
      sent = this.ctx.run('add_plain', args, this.plainRun);
    } else {
      const owner = { session: this.session, pending: digits, op: 'add' };
      sent =
        o.replicaAcks > 0
          ? this.replicated.add(this.ctx.scriptKeys.of('add', owner), args)
          : this.ctx.run('add', args, owner);
    }
    if (acked.length > 0) {
      // A call that failed (or was never run: e.g. Redis out of memory) may not have deleted
      // the records it names: the next call names them again (deleting twice is harmless).
      sent = sent.catch((e: unknown) => {
        for (const a of acked) this.acked.push(a);
        throw e;
      });
    }
    return keep ? sent.then((reply) => ((this.recordsKept = Date.now()), reply)) : sent;
  }
}
