/**
 * The reference model of one queue for test/integration/model/model.test.ts: what every job should
 * be after each operation, kept as small as the rules allow. Times are Redis ms, taken from
 * the replies (lease `now`, lease deadlines) or inferred (see `cleanAt`).
 *
 * Rules the lead is changing live in one function each (one-line changes):
 * `callerIdFreeAfterComplete` and `onLeaseLapsed`.
 */
import type { Lease } from '../../../lib/index.js';
import { Kept } from './kept.js';
import type {
  AddSpec,
  CleanCounts,
  FlowCleanCounts,
  Leased,
  ModelJob,
  Payload,
  State,
} from './types.js';
import { MODEL_QUEUE } from './types.js';
import { Groups } from './groups.js';
import { leaseFromGroups } from './group-lease.js';
import { FlowModel } from './flows.js';

export * from './types.js';

// ------------------------------------------------------------ rules being changed by the lead

/**
 * Whether a caller id can be added again once its job COMPLETED. Today: yes (`added: true`,
 * a new incarnation). With `dedupeWindowMs` it will be refused for that window: return false.
 */
export function callerIdFreeAfterComplete(): boolean {
  return true;
}

/**
 * A lease that lapsed (deadline passed, or its worker's heartbeat did) and was reclaimed by
 * clean(): back to the FRONT of its list; a job that did not run alone (an 's' token) becomes
 * a suspect, leased alone from then on. The expiry count is not modelled, so the queue uses
 * maxLeaseExpiries 1000 and no job dies of expiries.
 */
function onLeaseLapsed(m: Model, job: ModelJob): void {
  if (!job.lease?.token.startsWith('s')) job.suspect = true;
  job.lastWorker = job.lease!.workerId;
  if (job.group !== undefined) m.groups.runsEnded([job.group]);
  m.toList(job, 'front');
}

// ------------------------------------------------------------ the model

export class Model {
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
  /** Registered workers (only dying clients register) -> last heartbeat. */
  readonly workers = new Map<string, number>();
  /** Every lease ever handed out. */
  readonly leases: Leased[] = [];
  /** complete() calls that returned true, per incarnation (rule: at most 1 each). */
  readonly completedTrue = new Map<string, number>();
  /** Kept completed jobs (keepCompleted). */
  readonly kept = new Kept();
  /** Groups: pending jobs per group, the round robin, running counts, limits (groups.ts). */
  groups = new Groups();
  /** The seq counter: the last seq given (adds, and grouped jobs put at the back). */
  /** Flows (parents and children in this queue) and their notices (flows.ts). */
  flows = new FlowModel();
  private lastSeq = 0;
  /** Where an add script's INCRBY left the counter (see addCall). */
  private counterAfterAdd = 0;
  private nextData = 0;

  /** A copy whose jobs and lists can change without touching this one (to try a lease). */
  clone(): Model {
    const c = new Model();
    for (const [seq, j] of this.jobs) c.jobs.set(seq, { ...j });
    this.lists.forEach((l, p) => c.lists[p].push(...l));
    c.groups = this.groups.clone();
    c.lastSeq = this.lastSeq;
    return c;
  }

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

  // ---- operations

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

  /** Due delayed jobs to the back of their lists, in due order (ties by seq). */
  promote(now: number): number {
    const due = [...this.jobs.values()]
      .filter((j) => j.state === 'delayed' && j.due! <= now)
      .sort((a, b) => a.due! - b.due! || Number(a.seq) - Number(b.seq));
    for (const j of due) this.toList(j, 'back');
    return due.length;
  }

  /**
   * The seqs a lease of `count` at Redis time `now` must return (and takes them off the lists).
   * A suspect runs alone: taken only as the first and single job of a batch for a caller that
   * holds nothing (`holds`); otherwise the batch ends before it and it stays first in line.
   */
  lease(count: number, now: number, holds = false): string[] {
    this.promote(now);
    const gl = this.groups.leaseStart(this.lists);
    if (gl?.on) {
      const taken = leaseFromGroups(this.groups, gl, count, holds, this.lists, (s) =>
        this.jobs.get(s),
      );
      for (const seq of taken) this.setState(this.jobs.get(seq)!, 'leased');
      return taken;
    }
    const out: string[] = [];
    let stopped = false;
    for (const list of this.lists) {
      while (!stopped && out.length < count && list.length > 0) {
        const job = this.jobs.get(list[0]!);
        if (job?.suspect) {
          stopped = true;
          if (out.length === 0 && !holds) out.push(list.shift()!);
          break;
        }
        const seq = list.shift()!;
        if (job) out.push(seq); // else a tombstone: skipped
      }
    }
    for (const seq of out) this.setState(this.jobs.get(seq)!, 'leased');
    return out;
  }

  /** Attach a lease the queue handed out for a job `lease(...)` predicted. */
  leased(lease: Leased): void {
    const job = this.jobs.get(lease.seq)!;
    job.lease = lease;
    job.deadline = lease.deadline;
    job.startedAt = lease.startedAt;
    this.leases.push(lease);
  }

  /**
   * complete(): true iff this incarnation still exists, whoever holds it. It is kept (the step
   * then tells `kept.finish` when); a pending one leaves its list (a stale lease completed it).
   */
  complete(lease: Lease): boolean {
    return this.completeBatch([lease])[0]!;
  }

  /**
   * completeAndLease's completes, in order (complete_and_lease.lua): a job completes once and is
   * kept (keepCompleted: with its group and parent); a lease that was current when the call came
   * ends its group's run after the batch, a stale one that still finds its job takes it out of
   * its place (and its group state) at once: a pending job leaves its list (no tombstone).
   */
  completeBatch(leases: Lease[]): boolean[] {
    const current = leases.map((l) => this.isCurrent(l));
    const done = new Set<string>();
    const ended: string[] = [];
    const out = leases.map((lease, i) => {
      const job = this.jobs.get(lease.seq);
      if (!job || done.has(lease.seq)) return false;
      done.add(lease.seq);
      if (current[i] && job.group !== undefined) ended.push(job.group);
      if (job.state === 'pending' && job.group === undefined) {
        const list = this.lists[job.priority]!;
        list.splice(list.indexOf(job.seq), 1);
      }
      this.kept.completed(job, lease.workerId, this.flows.parentOf.get(job.seq)?.parent);
      this.destroy(job, !current[i]);
      this.flows.ended(this, job, 'c');
      this.completedTrue.set(job.seq, (this.completedTrue.get(job.seq) ?? 0) + 1);
      if (job.cid !== undefined) this.completedCids.add(job.cid);
      return true;
    });
    this.groups.runsEnded(ended);
    return out;
  }

  /**
   * fail(): 'lost' unless current; 'dead' at the last attempt or when not retryable; else
   * 'retried': back of its list, or delayed by its retry delay (the caller then records the
   * observed due time with `toDelayed`).
   */
  fail(lease: Lease, retryable: boolean): 'retried' | 'dead' | 'lost' {
    if (!this.isCurrent(lease)) return 'lost';
    const job = this.jobs.get(lease.seq)!;
    job.attempts += 1;
    job.lastWorker = lease.workerId;
    job.suspect = false; // it failed without killing its worker
    if (job.group !== undefined) this.groups.runsEnded([job.group]);
    if (!retryable || job.attempts >= job.maxAttempts) {
      this.dieOf(job);
      this.flows.ended(this, job, 'f');
      // fail() delivers a dead child's notice before it resolves.
      if (this.flows.parentOf.has(job.seq)) this.flows.deliver(this, [job.seq]);
      return 'dead';
    }
    if (job.retryMs > 0) this.setState(job, 'delayed');
    else this.toList(job, 'back');
    return 'retried';
  }

  /** An existing job now delayed until `due` (observed in Redis). */
  toDelayed(job: ModelJob, due: number | undefined): void {
    if (due === undefined) throw new Error(`job ${job.id}: delayed without a due time`);
    this.setState(job, 'delayed');
    job.due = due;
  }

  /** release(): current ⇒ to the FRONT, no attempt counted. */
  release(lease: Lease): boolean {
    if (!this.isCurrent(lease)) return false;
    const job = this.jobs.get(lease.seq)!;
    if (job.group !== undefined) this.groups.runsEnded([job.group]);
    this.toList(job, 'front');
    return true;
  }

  /** extend(): current ⇒ the new deadline (as the reply set it on the lease). */
  /**
   * extend() of a current lease, run at Redis time `at`: its worker's renewal counts as its
   * heartbeat too (extend_leases.lua: a registered worker's score, never lowered).
   */
  extend(lease: Lease, deadline: number, at: number): boolean {
    if (!this.isCurrent(lease)) return false;
    this.jobs.get(lease.seq)!.deadline = deadline;
    const beat = this.workers.get(lease.workerId);
    if (beat !== undefined && at > beat) this.workers.set(lease.workerId, at);
    return true;
  }

  progress(lease: Lease, value: unknown): boolean {
    if (!this.isCurrent(lease)) return false;
    this.jobs.get(lease.seq)!.progress = value;
    return true;
  }

  /** cancel(): the job stops existing; a flow job's parent learns it, or its children. */
  cancel(id: string): boolean {
    const job = this.byPublicId(id);
    if (!job) return false;
    this.remove(job);
    if (this.flows.ended(this, job, 'x')) this.flows.flushNow(this);
    return true;
  }

  /**
   * What clean() does to flows at Redis time `now` (its last step, after the rest at a time no
   * later), without changing anything.
   */
  flowCleanReportAt(now: number): FlowCleanCounts {
    const c = this.clone();
    c.flows = this.flows.clone();
    return c.flows.due(c, now);
  }

  /** What clean() at Redis time `now` reports, without changing anything. */
  cleanReportAt(now: number): CleanCounts {
    const lapsed = this.lapsedWorkers(now);
    let promoted = 0;
    let reclaimed = 0;
    let fromWorkers = 0;
    for (const j of this.jobs.values()) {
      if (j.state === 'delayed' && j.due! <= now) promoted++;
      else if (j.state === 'leased' && j.deadline! <= now) reclaimed++;
      else if (j.state === 'leased' && lapsed.includes(j.lease!.workerId)) fromWorkers++;
    }
    return { promoted, reclaimed, deadWorkers: lapsed.length, reclaimedFromWorkers: fromWorkers };
  }

  /**
   * clean() at Redis time `now`: promote due jobs, expired leases back to the front (earliest
   * deadline first in line), then each lapsed worker's jobs (in the order it leased them).
   */
  cleanAt(now: number): void {
    const lapsed = this.lapsedWorkers(now);
    if (this.firstLookAt(now)) this.lookedAt = now;
    this.promote(now);
    const leased = [...this.jobs.values()].filter((j) => j.state === 'leased');
    const expired = leased
      .filter((j) => j.deadline! <= now)
      .sort((a, b) => a.deadline! - b.deadline! || Number(a.seq) - Number(b.seq));
    for (const j of expired.reverse()) onLeaseLapsed(this, j);
    for (const wid of lapsed) {
      const held = leased
        .filter((j) => j.state === 'leased' && j.lease!.workerId === wid)
        .sort((a, b) => tokenNumber(a.lease!) - tokenNumber(b.lease!));
      for (const j of held.reverse()) onLeaseLapsed(this, j);
      this.workers.delete(wid);
    }
  }

  /**
   * A worker registered (or beat) at Redis time `at`. When no beat at all landed for a heartbeat
   * timeout before it, heartbeats are judged only from `at` on (Redis may have been out of
   * reach: see lib/scripts/heartbeat.lua).
   */
  beat(wid: string, at: number): void {
    const hb = MODEL_QUEUE.heartbeatTimeoutMs;
    if (this.lastBeat !== undefined && at - this.lastBeat > hb) this.judgedSince = at;
    this.lastBeat = at;
    this.workers.set(wid, at);
  }

  private lastBeat: number | undefined;
  private judgedSince = 0;
  /** When a clean first found no beat landed for half a timeout (see lapsed() in reclaim.lua). */
  private lookedAt = 0;

  /**
   * Whether a clean at `now` is the first look at a silence of every beat past half a timeout:
   * it judges nobody, and notes when it looked.
   */
  private firstLookAt(now: number): boolean {
    const hb = MODEL_QUEUE.heartbeatTimeoutMs;
    if (this.workers.size === 0 || this.judgedSince > now - hb) return false;
    const last = this.lastBeat ?? 0;
    return now - last > hb / 2 && this.lookedAt <= last;
  }

  /** Workers whose heartbeat lapsed at `now`, in the order clean() finds them. */
  private lapsedWorkers(now: number): string[] {
    const hb = MODEL_QUEUE.heartbeatTimeoutMs;
    if (this.judgedSince > now - hb) return [];
    const last = this.lastBeat ?? 0;
    if (now - last > hb / 2 && (this.lookedAt <= last || now - this.lookedAt < hb / 2)) return [];
    return [...this.workers]
      .filter(([, beat]) => beat < now - MODEL_QUEUE.heartbeatTimeoutMs)
      .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0))
      .map(([wid]) => wid);
  }

  /**
   * repair(): drops every tombstone (returns how many distinct cancelled jobs had some), then
   * delivers every flow notice and cancel at once.
   */
  repair(): number {
    const dropped = new Set<string>();
    for (const list of this.lists) {
      for (const seq of list) if (!this.jobs.has(seq)) dropped.add(seq);
      const live = list.filter((seq) => this.jobs.has(seq));
      list.splice(0, list.length, ...live);
    }
    this.flows.all(this);
    return dropped.size;
  }

  /** Redis times at which something changes by itself (due, deadline, heartbeat lapse). */
  timeEvents(): number[] {
    const t: number[] = [];
    for (const j of this.jobs.values()) {
      if (j.state === 'delayed') t.push(j.due!);
      if (j.state === 'leased') t.push(j.deadline!);
    }
    for (const beat of this.workers.values()) t.push(beat + MODEL_QUEUE.heartbeatTimeoutMs + 1);
    t.push(...this.flows.timeEvents());
    if (this.judgedSince > 0) t.push(this.judgedSince + MODEL_QUEUE.heartbeatTimeoutMs + 1);
    if (this.lookedAt > (this.lastBeat ?? 0))
      t.push(this.lookedAt + Math.ceil(MODEL_QUEUE.heartbeatTimeoutMs / 2));
    return t;
  }
}

/** A lease token's number ('s<n>' for a suspect's solo run). */
function tokenNumber(lease: Lease): number {
  return Number(lease.token.replace(/^s/, ''));
}
