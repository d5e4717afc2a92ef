/**
 * Flows in the reference model (test/support/model/model.ts): parents in the model's queue that
 * wait for children in the same queue, and the notice protocol of docs/internals/flows.md as the
 * queue runs it — which notices wait to be delivered, which were delivered once (their second
 * delivery is due), which children of ended parents wait to be cancelled — with the Redis times
 * the queue gave them (read back from Redis: `undefined` until then).
 */
import type { ModelJob } from './types.js';

/** What flows need of the model (model.ts; not imported: model-jobs.ts imports this file). */
interface Model {
  readonly jobs: Map<string, ModelJob>;
  toList(job: ModelJob, end: 'front' | 'back'): void;
  dieOf(job: ModelJob): void;
  remove(job: ModelJob): void;
}

/** clean() delivers notices and cancels older than this (lib/queue/flows/delivery.ts). */
export const GRACE_MS = 2_000;

export type Outcome = 'c' | 'f' | 'x';
export type Policy = 'f' | 'i' | 'r';

export interface Counts {
  pending: number;
  completed: number;
  failed: number;
  cancelled: number;
}

/** What a delivery (or a clean) did: notices delivered, children cancelled. */
export interface FlowWork {
  notices: number;
  cancelled: number;
}

export class FlowModel {
  /** Counts a case that came up (model.test.ts prints them with MODEL_STATS=1). */
  static note: (what: string) => void = () => undefined;

  /** Child seq -> its parent's seq and policy. */
  readonly parentOf = new Map<string, { parent: string; policy: Policy }>();
  /** Parent seq -> children still awaited (in the order it was given them), and counts. */
  readonly parents = new Map<string, { awaited: string[]; stopped: string[]; counts: Counts }>();
  /** Notices not delivered yet: child seq -> outcome, written at (Redis ms). */
  readonly undelivered = new Map<string, { outcome: Outcome; at?: number }>();
  /** Notices delivered once: child seq -> their outcome, and when the second delivery is due. */
  readonly rechecks = new Map<string, { outcome: Outcome; due?: number }>();
  /** Children of ended parents to cancel: child seq -> since (Redis ms). */
  readonly cancels = new Map<string, { at?: number }>();

  clone(): FlowModel {
    const c = new FlowModel();
    for (const [k, v] of this.parentOf) c.parentOf.set(k, { ...v });
    for (const [k, v] of this.parents)
      c.parents.set(k, {
        awaited: [...v.awaited],
        stopped: [...v.stopped],
        counts: { ...v.counts },
      });
    for (const [k, v] of this.undelivered) c.undelivered.set(k, { ...v });
    for (const [k, v] of this.rechecks) c.rechecks.set(k, { ...v });
    for (const [k, v] of this.cancels) c.cancels.set(k, { ...v });
    return c;
  }

  /** A flow was added: `parent` awaits `children` (seqs, with their policies). */
  added(parent: string, children: Array<{ seq: string; policy: Policy }>): void {
    this.parents.set(parent, {
      awaited: children.map((c) => c.seq),
      stopped: [],
      counts: { pending: children.length, completed: 0, failed: 0, cancelled: 0 },
    });
    for (const c of children) this.parentOf.set(c.seq, { parent, policy: c.policy });
  }

  /**
   * Job `job` ended (completed, dead, cancelled): a child writes its notice; a parent stops its
   * children. True when it wrote flow work to deliver (cancel.lua's flag).
   */
  ended(m: Model, job: ModelJob, outcome: Outcome): boolean {
    const child = this.parentOf.has(job.seq);
    if (child) this.undelivered.set(job.seq, { outcome });
    const stops = outcome !== 'c' && (this.parents.get(job.seq)?.awaited.length ?? 0) > 0;
    if (stops) this.stopChildren(job.seq);
    if (outcome === 'c' || !m.jobs.has(job.seq)) this.parents.delete(job.seq);
    return child || stops;
  }

  /** Parent `seq` ended: the children it still awaited are to be cancelled. */
  private stopChildren(seq: string): void {
    const p = this.parents.get(seq)!;
    for (const c of p.awaited) this.cancels.set(c, {});
    p.stopped.push(...p.awaited);
    p.counts.cancelled += p.awaited.length;
    p.counts.pending = 0;
    p.awaited = [];
  }

  /**
   * The ids of the notices not delivered yet, in the order the queue reads them (by time, then
   * by id). One whose time was not read back yet was written in this step: the newest (a cancel
   * delivers every notice left after the older ones, e.g. a dead client's completion).
   */
  private inOrder<V extends { at?: number; due?: number }>(m: Map<string, V>, keys?: string[]) {
    const t = (v: V) => v.at ?? v.due ?? Number.POSITIVE_INFINITY;
    return (keys ?? [...m.keys()]).sort((a, b) => t(m.get(a)!) - t(m.get(b)!) || (a < b ? -1 : 1));
  }

  /** Deliver the notices of `seqs` (in that order) as FlowDelivery does; its follow-ups too. */
  deliver(m: Model, seqs: string[], again: string[] = []): FlowWork {
    const work: FlowWork = { notices: 0, cancelled: 0 };
    let followUp = false;
    for (const seq of seqs) {
      const n = this.undelivered.get(seq);
      if (!n) continue;
      this.undelivered.delete(seq);
      this.rechecks.set(seq, { outcome: n.outcome });
      if (this.apply(m, seq, n.outcome)) followUp = true;
      work.notices++;
    }
    for (const seq of again) {
      this.rechecks.delete(seq);
      work.notices++;
    }
    if (followUp) this.add(work, this.flushNow(m));
    return work;
  }

  /** flow_due 'now' and what it leads to: every notice not delivered, every cancel. */
  flushNow(m: Model): FlowWork {
    const work = this.deliver(m, this.inOrder(this.undelivered));
    this.add(work, this.cancel(m, this.inOrder(this.cancels)));
    return work;
  }

  /** clean() at Redis time `now`: what is due, delivered and cancelled. */
  due(m: Model, now: number): FlowWork {
    const first = this.inOrder(this.undelivered).filter(
      (s) => this.undelivered.get(s)!.at! <= now - GRACE_MS,
    );
    const second = this.inOrder(this.rechecks).filter((s) => this.rechecks.get(s)!.due! <= now);
    const cancels = this.inOrder(this.cancels).filter(
      (s) => this.cancels.get(s)!.at! <= now - GRACE_MS,
    );
    const work = this.deliver(m, first, second);
    this.add(work, this.cancel(m, cancels));
    return work;
  }

  /** repair(): everything delivered, every cancel done, now. */
  all(m: Model): FlowWork {
    const work = this.deliver(m, this.inOrder(this.undelivered), this.inOrder(this.rechecks));
    this.add(work, this.cancel(m, this.inOrder(this.cancels)));
    return work;
  }

  /** Times at which clean() finds flow work due. */
  timeEvents(): number[] {
    const t: number[] = [];
    for (const n of this.undelivered.values()) if (n.at !== undefined) t.push(n.at + GRACE_MS);
    for (const n of this.rechecks.values()) if (n.due !== undefined) t.push(n.due);
    for (const c of this.cancels.values()) if (c.at !== undefined) t.push(c.at + GRACE_MS);
    return t;
  }

  private add(to: FlowWork, w: FlowWork): void {
    to.notices += w.notices;
    to.cancelled += w.cancelled;
  }

  /** A notice reaches parent of child `seq`: true when the parent failed (follow-ups due). */
  private apply(m: Model, seq: string, outcome: Outcome): boolean {
    const { parent, policy } = this.parentOf.get(seq)!;
    const p = this.parents.get(parent);
    const job = m.jobs.get(parent);
    if (!p || !job || job.state !== 'waiting-children' || !p.awaited.includes(seq)) {
      // A child its parent's end stopped that ended by itself (it ran on): not one it stopped,
      // counted by how it ended.
      if (p && outcome !== 'x' && p.stopped.includes(seq)) {
        FlowModel.note('flow: a stopped child ended by itself');
        p.stopped = p.stopped.filter((s) => s !== seq);
        p.counts.cancelled--;
        if (outcome === 'c') p.counts.completed++;
        else if (policy !== 'r') p.counts.failed++;
      } else FlowModel.note('flow: notice with nothing to do');
      return false;
    }
    FlowModel.note(`flow: child ${outcome === 'c' ? 'completed' : `failed (${policy})`}`);
    p.awaited = p.awaited.filter((s) => s !== seq);
    p.counts.pending--;
    if (outcome === 'c') p.counts.completed++;
    else if (policy !== 'r') p.counts.failed++;
    if (outcome !== 'c' && policy === 'f') {
      m.dieOf(job);
      // Children it still awaited: cancelled by the delivery's next step (flow_due 'now').
      const left = p.awaited.length > 0;
      this.stopChildren(parent);
      return left;
    }
    if (p.awaited.length === 0) {
      FlowModel.note('flow: parent ready');
      m.toList(job, 'back');
    }
    return false;
  }

  /** flow_cancel of children `seqs`: those not started are cancelled; running ones wait. */
  private cancel(m: Model, seqs: string[]): FlowWork {
    const work: FlowWork = { notices: 0, cancelled: 0 };
    for (const seq of seqs) {
      const job = m.jobs.get(seq);
      if (job?.state === 'leased') {
        FlowModel.note('flow: running child of an ended parent left to end');
        this.cancels.set(seq, {}); // looked at again later (its time read back)
        continue;
      }
      this.cancels.delete(seq);
      if (!job || job.state === 'dead') continue;
      if (this.parents.has(seq)) this.stopChildren(seq);
      this.parents.delete(seq);
      m.remove(job);
      work.cancelled++;
    }
    return work;
  }
}
