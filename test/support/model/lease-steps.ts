/**
 * The steps of test/integration/model/model.test.ts on a lease handed out before (commands.ts),
 * current or stale: complete, completeAndLease, fail, release, extend, progress.
 */
import { expect } from '@jest/globals';
import { NonRetryableError, WorkQueueError } from '../../../lib/index.js';
import type { Lease } from '../../../lib/index.js';
import { Checked, tookAsModelSays } from './commands.js';
import type { Real } from './snapshot.js';
import type { Model } from './model.js';

/** A current lease, or a stale one (expired and reclaimed, released, failed, finished...). */
export interface LeasePick {
  stale: boolean;
  pick: number;
}

/** The lease asked for: one of the kind asked for if any, else of the other kind. */
function pickLease(m: Model, { stale, pick }: LeasePick): Lease | undefined {
  const asked = m.leases.filter((l) => m.isCurrent(l) !== stale);
  const pool = asked.length > 0 ? asked : m.leases;
  return pool.length > 0 ? pool[pick % pool.length] : undefined;
}

const show = (p: LeasePick) => `${p.stale ? 'stale' : 'current'}#${p.pick}`;
/** For the stats: which kind the lease turned out to be. */
const kind = (m: Model, l: Lease) => (m.isCurrent(l) ? 'current' : 'stale');

/** A stale lease's fail/progress may refuse with LEASE_LOST instead of resolving 'lost'/false. */
async function lostAs<T>(p: Promise<T>, lost: T): Promise<T> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof WorkQueueError && e.code === 'LEASE_LOST') return lost;
    throw e;
  }
}

/** (c)/(d): true exactly once per incarnation; a stale lease only while that incarnation lives. */
export class Complete extends Checked {
  constructor(readonly which: LeasePick) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const lease = pickLease(m, this.which);
    if (!lease) return r.note('complete: no lease yet');
    const was = kind(m, lease);
    const got = await r.q.complete(lease);
    expect({ complete: lease.seq, got }).toEqual({ complete: lease.seq, got: m.complete(lease) });
    await m.kept.finish(r.q, r.redis);
    // complete() delivers a flow child's notice before it resolves.
    if (got && m.flows.parentOf.has(lease.seq)) m.flows.deliver(m, [lease.seq]);
    r.note(`complete: ${was} -> ${got}`);
  }
  toString(): string {
    return `complete(${show(this.which)})`;
  }
}

/**
 * completeAndLease (a worker's fused call): a batch of completes of one worker's leases, each
 * decided in order as if alone (so two leases of one job in a batch complete it once), then
 * maybe a lease. `sameJob`: every lease ever handed out for the first one's job (the same
 * lease twice when there is only one), in order or reversed.
 */
export class CompleteBatch extends Checked {
  constructor(
    readonly picks: LeasePick[],
    readonly sameJob: boolean,
    readonly reversed: boolean,
    readonly next: number,
  ) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const first = pickLease(m, this.picks[0]);
    if (!first) return r.note('completeAndLease: no lease yet');
    const mine = (l: Lease) => l.workerId === first.workerId;
    let leases = this.sameJob
      ? m.leases.filter((l) => l.seq === first.seq && mine(l))
      : this.picks.map((p) => pickLease(m, p)!).filter(mine);
    if (leases.length === 1) leases = [first, first];
    if (this.reversed) leases.reverse();
    const kinds = leases.map((l) => kind(m, l)).join('+');
    const next = this.next > 0 && first.workerId === '0' ? this.next : 0;
    const got = await r.q.completeAndLease(
      leases.map((lease) => ({ lease })),
      next > 0 ? { count: next, leaseMs: 60_000 } : undefined,
    );
    const want = m.completeBatch(leases);
    await m.kept.finish(r.q, r.redis, got.now);
    const seqs = leases.map((l) => l.seq);
    expect({ seqs, completed: got.completed }).toEqual({ seqs, completed: want });
    r.note(`completeAndLease: ${new Set(seqs).size < seqs.length ? 'one job twice' : kinds}`);
    if (next > 0) tookAsModelSays(m, got.jobs, next, got.now);
    else expect(got.jobs).toEqual([]);
    // Then (after its lease), as the Worker does, the notices of the flow children it completed.
    const children = seqs.filter((s, i) => got.completed[i] && m.flows.parentOf.has(s));
    if (children.length > 0) {
      await r.q.deliverFlowNotices(children);
      m.flows.deliver(m, children);
    }
  }
  toString(): string {
    const how = this.sameJob ? 'every lease of one job' : this.picks.map(show).join(' ');
    const then = this.next > 0 ? `, lease ${this.next}` : '';
    return `completeAndLease(${how}${this.reversed ? ' reversed' : ''}${then})`;
  }
}

export class Fail extends Checked {
  constructor(
    readonly which: LeasePick,
    readonly retryable: boolean,
  ) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const lease = pickLease(m, this.which);
    if (!lease) return r.note('fail: no lease yet');
    const was = kind(m, lease);
    const error = this.retryable ? new Error('boom') : new NonRetryableError('bad input');
    const got = await lostAs(r.q.fail(lease, error), 'lost' as const);
    expect({ fail: lease.seq, got }).toEqual({
      fail: lease.seq,
      got: m.fail(lease, this.retryable),
    });
    const job = m.jobs.get(lease.seq);
    r.note(`fail: ${was} -> ${got}${job?.state === 'delayed' ? ' (delayed)' : ''}`);
    if (got === 'retried' && job?.state === 'delayed')
      m.toDelayed(job, (await r.q.getJob(job.id))?.at);
  }
  toString(): string {
    return `fail(${show(this.which)}, ${this.retryable ? 'retryable' : 'NonRetryableError'})`;
  }
}

export class Release extends Checked {
  constructor(readonly which: LeasePick) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const lease = pickLease(m, this.which);
    if (!lease) return r.note('release: no lease yet');
    const was = kind(m, lease);
    const [got] = await r.q.release(lease);
    expect({ release: lease.seq, got }).toEqual({ release: lease.seq, got: m.release(lease) });
    r.note(`release: ${was} -> ${got}`);
  }
  toString(): string {
    return `release(${show(this.which)})`;
  }
}

export class Extend extends Checked {
  constructor(
    readonly which: LeasePick,
    readonly ms: number,
  ) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const lease = pickLease(m, this.which);
    if (!lease) return r.note('extend: no lease yet');
    const was = kind(m, lease);
    const [got] = await r.q.extend(lease, this.ms);
    const want = m.extend(lease, lease.deadline, lease.deadline - this.ms);
    expect({ extend: lease.seq, got }).toEqual({ extend: lease.seq, got: want });
    r.note(`extend: ${was} -> ${got}`);
  }
  toString(): string {
    return `extend(${show(this.which)}, ${this.ms}ms)`;
  }
}

export class Progress extends Checked {
  constructor(
    readonly which: LeasePick,
    readonly value: number,
  ) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const lease = pickLease(m, this.which);
    if (!lease) return r.note('progress: no lease yet');
    const was = kind(m, lease);
    const got = await lostAs(r.q.progress(lease, this.value), false);
    const want = m.progress(lease, this.value);
    expect({ progress: lease.seq, got }).toEqual({ progress: lease.seq, got: want });
    r.note(`progress: ${was} -> ${got}`);
  }
  toString(): string {
    return `progress(${show(this.which)}, ${this.value})`;
  }
}
