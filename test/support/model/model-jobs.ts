/**
 * The jobs of the reference model (test/support/model/model.ts) and where each one is: its
 * state, its place in a pending list or group, the caller ids, the seq counter; the moves
 * between states (one place each), and adding jobs. The operations on them are in model.ts.
 */
import type { Lease } from '../../../lib/index.js';
import { Kept } from './kept.js';
import type { AddSpec, Leased, ModelJob, Payload, State } from './types.js';
import { MODEL_QUEUE } from './types.js';
import { Groups } from './groups.js';
import { FlowModel } from './flows.js';

// ------------------------------------------------------------ a rule being changed by the lead

/**
 * Whether a caller id can be added again once its job COMPLETED. Today: yes (`added: true`,
 * a new incarnation). With `dedupeWindowMs` it will be refused for that window: return false.
 */
export function callerIdFreeAfterComplete(): boolean {
  return true;
}

// ------------------------------------------------------------ the jobs

export class ModelJobs {
  /** Live jobs by seq. */
  readonly jobs = new Map<string, ModelJob>();
  /**
   * Pending lists p0..p9 as seqs; a seq with no live job is the tombstone of a job cancelled
   * (or completed by a stale lease) while pending.
   */
  readonly lists: string[][] = Array.from({ length: 10 }, () => []);
  /** Caller id -> seq of its live job. */
  readonly cids = new Map<string, string>();
  /** Caller ids whose last job completed (and was not added again since). */
  readonly completedCids = new Set<string>();
  /** Every public id ever added (getJob is checked for all of them). */
  readonly publicIds = new Set<string>();
  /** Every lease ever handed out. */
  readonly leases: Leased[] = [];
  /** complete() calls that returned true, per incarnation (rule: at most 1 each). */
  readonly completedTrue = new Map<string, number>();
  /** Kept completed jobs (keepCompleted). */
  readonly kept = new Kept();
  /** Groups: pending jobs per group, the round robin, running counts, limits (groups.ts). */
  groups = new Groups();
  /** Flows (parents and children in this queue) and their notices (flows.ts). */
  flows = new FlowModel();
  /** The seq counter: the last seq given (adds, and grouped jobs put at the back). */
  protected lastSeq = 0;
  /** Where an add script's INCRBY left the counter (see addCall). */
  private counterAfterAdd = 0;
  private nextData = 0;

  // ---- lookups

  byPublicId(id: string): ModelJob | undefined {
    const seq = this.cids.get(id) ?? id;
    const job = this.jobs.get(seq);
    return job && job.id === id ? job : undefined;
  }

  isCurrent(lease: Lease): boolean {
    return this.jobs.get(lease.seq)?.lease?.token === lease.token;
  }

  // ---- state moves (one place each)

  /** To the front or back of its list; a grouped job into its group (front: at its seq). */
  toList(job: ModelJob, end: 'front' | 'back'): void {
    const list = this.lists[job.priority];
    if (job.group !== undefined) {
      const place = end === 'front' ? Number(job.seq) : ++this.lastSeq;
      this.groups.place(job.group, { seq: job.seq, prio: job.priority, place });
    } else if (end === 'front') list.unshift(job.seq);
    else list.push(job.seq);
    this.setState(job, 'pending');
  }

  setState(job: ModelJob, state: State): void {
    job.state = state;
    if (state !== 'leased') {
      delete job.lease;
      delete job.deadline;
    }
    if (state !== 'delayed') delete job.due;
  }

  /** It stops existing; `groupToo`: out of its group (pending) or its run ends (leased). */
  destroy(job: ModelJob, groupToo = true): void {
    const g = job.group;
    if (groupToo && g !== undefined) {
      if (this.groups.take(g, job.seq)) this.groups.tidy(g);
      else if (job.state === 'leased') this.groups.runsEnded([g]);
    }
    this.jobs.delete(job.seq);
    if (job.cid !== undefined) this.cids.delete(job.cid);
  }

  /** The job stops existing (a pending one leaves its tombstone in its list). */
  remove(job: ModelJob): void {
    this.destroy(job);
  }

  /** A parent dead-lettered because a child failed it. */
  dieOf(job: ModelJob): void {
    this.setState(job, 'dead');
    delete job.progress;
  }

  /** An existing job now delayed until `due` (observed in Redis). */
  toDelayed(job: ModelJob, due: number | undefined): void {
    if (due === undefined) throw new Error(`job ${job.id}: delayed without a due time`);
    this.setState(job, 'delayed');
    job.due = due;
  }

  // ---- adding jobs

  /**
   * One add script call of these jobs (a chunk of up to 2 000) is about to be recorded: it took
   * a seq for every job whose caller id was free when it began (add.lua's INCRBY; a caller id
   * twice in one call counts twice, the second is refused). Call before its `added`s.
   */
  addCall(specs: AddSpec[]): void {
    const fresh = specs.filter((s) => s.cid === undefined || !this.cids.has(s.cid)).length;
    this.counterAfterAdd = this.lastSeq + fresh;
  }

  /** A flow's nodes are about to be recorded: flow_reserve.lua took `n` seqs at once. */
  flowCall(n: number): void {
    this.counterAfterAdd = this.lastSeq + n;
  }

  /** After an add call's `added`s: the counter where its INCRBY left it. */
  addCallDone(): void {
    this.lastSeq = Math.max(this.lastSeq, this.counterAfterAdd);
  }

  /** The `added` flag add() must report for `spec`. */
  expectAdded(spec: AddSpec): boolean {
    if (spec.cid === undefined) return true;
    if (this.cids.has(spec.cid)) return false;
    return !this.completedCids.has(spec.cid) || callerIdFreeAfterComplete();
  }

  /**
   * Record an added job: its payload, `seq` as observed in Redis (must be new and larger than every seq
   * before), `due` its observed due time when delayed.
   */
  added(
    spec: AddSpec,
    data: Payload,
    seq: string,
    due: number | undefined,
    state: 'waiting-children' | undefined = undefined,
    within?: [number, number],
  ): ModelJob {
    if (!/^\d+$/.test(seq) || Number(seq) <= this.lastSeq || Number(seq) > this.counterAfterAdd)
      throw new Error(`add gave seq ${seq}, not a fresh number after ${this.lastSeq}`);
    this.lastSeq = Number(seq);
    const job: ModelJob = {
      seq,
      id: spec.cid ?? seq,
      data,
      priority: spec.priority,
      state: 'pending',
      attempts: 0,
      maxAttempts: spec.maxAttempts ?? MODEL_QUEUE.maxAttempts,
      retryMs: spec.retryMs,
    };
    if (within) job.addedWithin = within;
    if (spec.group !== undefined) job.group = spec.group;
    if (spec.cid !== undefined) {
      job.cid = spec.cid;
      this.cids.set(spec.cid, seq);
      this.completedCids.delete(spec.cid);
      this.kept.added(spec.cid);
    }
    this.jobs.set(seq, job);
    this.publicIds.add(job.id);
    if (state) this.setState(job, state);
    else if (spec.delayMs) this.toDelayed(job, due);
    else if (job.group !== undefined) {
      // A new grouped job's place in line is its seq.
      this.groups.place(job.group, { seq, prio: job.priority, place: Number(seq) });
    } else this.toList(job, 'back');
    return job;
  }

  /** A payload no job had before. */
  newData(): Payload {
    return { n: this.nextData++ };
  }
}
