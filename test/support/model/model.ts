/**
 * The reference model of one queue for test/integration/model/model.test.ts: what every job should
 * be after each operation, kept as small as the rules allow. Times are Redis ms, taken from
 * the replies (lease `now`, lease deadlines) or inferred (see `cleanAt`). The jobs and their
 * moves between states are in model-jobs.ts, the workers' heartbeats in heartbeats.ts.
 *
 * Rules the lead is changing live in one function each (one-line changes):
 * `callerIdFreeAfterComplete` (model-jobs.ts) and `onLeaseLapsed` (here).
 */
import type { Lease } from '../../../lib/index.js';
import type { CleanCounts, FlowCleanCounts, Leased, ModelJob } from './types.js';
import { leaseFromGroups } from './group-lease.js';
import { Heartbeats } from './heartbeats.js';
import { ModelJobs } from './model-jobs.js';

export * from './types.js';

// ------------------------------------------------------------ a rule being changed by the lead

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

export class Model extends ModelJobs {
  /** The registered workers and their heartbeats (heartbeats.ts). */
  readonly heartbeats = new Heartbeats();

  /** A copy whose jobs and lists can change without touching this one (to try a lease). */
  clone(): Model {
    const c = new Model();
    for (const [seq, j] of this.jobs) c.jobs.set(seq, { ...j });
    this.lists.forEach((l, p) => c.lists[p].push(...l));
    c.groups = this.groups.clone();
    c.lastSeq = this.lastSeq;
    return c;
  }

  // ---- operations

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
    this.heartbeats.renewed(lease.workerId, at);
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
    const lapsed = this.heartbeats.lapsedWorkers(now);
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
    const lapsed = this.heartbeats.cleanAt(now);
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
      this.heartbeats.workers.delete(wid);
    }
  }

  /** A worker registered (or beat) at Redis time `at` (heartbeats.ts). */
  beat(wid: string, at: number): void {
    this.heartbeats.beat(wid, at);
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
    t.push(...this.heartbeats.lapseTimes());
    t.push(...this.flows.timeEvents());
    t.push(...this.heartbeats.silenceTimes());
    return t;
  }
}

/** A lease token's number ('s<n>' for a suspect's solo run). */
function tokenNumber(lease: Lease): number {
  return Number(lease.token.replace(/^s/, ''));
}
