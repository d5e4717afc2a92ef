/**
 * The steps of test/integration/model/model.test.ts: each one runs an operation on the real queue,
 * compares the outcome with the model, updates the model, then runs every check (check.ts).
 * clean, repair and waits for Redis time are in maintenance.ts, client deaths in death.ts.
 */
import { expect } from '@jest/globals';
import fc from 'fast-check';
import { NonRetryableError, WorkQueueError } from '../../../lib/index.js';
import type { AddOptions, Lease } from '../../../lib/index.js';
import { checkAll, redisTime, type Real } from './check.js';
import type { AddSpec, Leased, Model } from './model.js';

export type Step = fc.AsyncCommand<Model, Real>;

/** A step: `act`, then every check. */
export abstract class Checked implements Step {
  check(): boolean {
    return true;
  }
  async run(m: Model, r: Real): Promise<void> {
    await this.act(m, r);
    await checkAll(m, r);
  }
  abstract act(m: Model, r: Real): Promise<void>;
  abstract toString(): string;
}

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

function addOptions(s: AddSpec): AddOptions {
  const o: AddOptions = { priority: s.priority };
  if (s.cid !== undefined) o.id = s.cid;
  if (s.delayMs !== undefined) o.delayMs = s.delayMs;
  if (s.maxAttempts !== undefined) o.maxAttempts = s.maxAttempts;
  if (s.retryMs > 0) o.backoff = { type: 'fixed', delayMs: s.retryMs };
  if (s.group !== undefined) o.group = s.group;
  return o;
}

/** add / addBulk (also the re-add of a caller id: the ids come from a pool of four). */
export class Add extends Checked {
  constructor(readonly specs: AddSpec[]) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const datas = this.specs.map(() => m.newData());
    const jobs = this.specs.map((s, i) => ({ data: datas[i], opts: addOptions(s) }));
    const t0 = await redisTime(r);
    const results =
      jobs.length === 1 ? [await r.q.add(jobs[0].data, jobs[0].opts)] : await r.q.addBulk(jobs);
    const t1 = await redisTime(r);
    expect(results).toHaveLength(jobs.length);
    // What the replies do not say, read for all jobs at once: a caller id's internal number
    // (from the caller-id index) and a delayed job's due time.
    const seqs = await Promise.all(
      this.specs.map((spec, i) =>
        spec.cid === undefined || !results[i].added
          ? results[i].id
          : r.redis.hget(r.q.keys.key('callerIds'), spec.cid),
      ),
    );
    const dues = await Promise.all(
      this.specs.map(async (spec, i) =>
        spec.delayMs && results[i].added ? (await r.q.getJob(results[i].id))?.at : undefined,
      ),
    );
    for (const [i, spec] of this.specs.entries()) {
      // Each script call (2 000 jobs) took its seqs at once.
      if (i % 2000 === 0) {
        if (i > 0) m.addCallDone();
        m.addCall(this.specs.slice(i, i + 2000));
      }
      const res = results[i];
      expect({ i, added: res.added }).toEqual({ i, added: m.expectAdded(spec) });
      const again = spec.cid !== undefined && m.completedCids.has(spec.cid);
      r.note(
        `add: ${res.added ? 'added' : 'refused'}${again ? ' (caller id of a completed job)' : ''}`,
      );
      if (spec.cid !== undefined) expect(res.id).toBe(spec.cid);
      if (res.added) m.added(spec, datas[i], seqs[i] ?? '(missing)', dues[i], undefined, [t0, t1]);
    }
    m.addCallDone();
  }
  toString(): string {
    const one = (s: AddSpec) =>
      [
        s.cid ?? '-',
        `p${s.priority}`,
        s.delayMs ? `d${s.delayMs}` : '',
        s.maxAttempts ? `a${s.maxAttempts}` : '',
        s.retryMs ? `r${s.retryMs}` : '',
        s.group ? `@${s.group}` : '',
      ].join('');
    return this.specs.length === 1
      ? `add(${one(this.specs[0])})`
      : `addBulk(${this.specs.length}: ${this.specs.slice(0, 5).map(one).join(' ')}${this.specs.length > 5 ? ' …' : ''})`;
  }
}

/**
 * A lease call at Redis time `now` took what the model takes; the model records the leases.
 * Per-group limits, independently of the model's order: no group got more jobs than its
 * concurrency left room for, none of a paused group.
 */
function tookAsModelSays(m: Model, jobs: Leased[], count: number, now: number): void {
  const before = new Map(m.groups.running);
  const limits = new Map(m.groups.conc);
  const paused = new Set(m.groups.paused);
  expect(jobs.map((j) => j.seq)).toEqual(m.lease(count, now));
  const got = new Map<string, number>();
  for (const j of jobs) if (j.group !== undefined) got.set(j.group, (got.get(j.group) ?? 0) + 1);
  for (const [g, n] of got) {
    expect({ g, paused: paused.has(g) }).toEqual({ g, paused: false });
    const limit = limits.get(g);
    if (limit !== undefined)
      expect(n).toBeLessThanOrEqual(Math.max(0, limit - (before.get(g) ?? 0)));
  }
  for (const j of jobs) {
    const job = m.jobs.get(j.seq)!;
    expect([j.id, j.data, j.priority, j.attempt, j.startedAt]).toEqual([
      job.id,
      job.data,
      job.priority,
      job.attempts + 1,
      now,
    ]);
    if (job.addedAt !== undefined)
      expect({ seq: j.seq, added: j.addedAt }).toEqual({ seq: j.seq, added: job.addedAt });
    m.leased(j);
  }
}

export class LeaseStep extends Checked {
  constructor(
    readonly count: number,
    readonly leaseMs: number,
  ) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const batch = await r.q.leaseBatch({ count: this.count, leaseMs: this.leaseMs });
    tookAsModelSays(m, batch.jobs, this.count, batch.now);
    r.note(
      `lease: ${batch.jobs.length === 0 ? 'none' : batch.jobs.length < this.count ? 'fewer' : 'full'}`,
    );
  }
  toString(): string {
    return `lease(${this.count}, ${this.leaseMs}ms)`;
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

/**
 * Cancel a live job, one whose job is gone, the number of a job that has a caller id, or an
 * id never added.
 */
export class Cancel extends Checked {
  constructor(
    readonly target: 'live' | 'gone' | 'number' | 'never',
    readonly pick: number,
  ) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const live = [...m.jobs.values()].map((j) => j.id);
    const gone = [...m.publicIds].filter((id) => !m.byPublicId(id));
    // The number of a job added with a caller id is not its public id.
    const numbers = [...m.jobs.values()].filter((j) => j.cid !== undefined).map((j) => j.seq);
    const pools = { live, gone, number: numbers, never: [] };
    const pool = pools[this.target];
    const id = pool.length > 0 ? pool[this.pick % pool.length] : `never-${this.pick}`;
    const got = await r.q.cancel(id);
    expect({ cancel: id, got }).toEqual({ cancel: id, got: m.cancel(id) });
    r.note(`cancel: ${pool.length > 0 ? this.target : 'never'} -> ${got}`);
  }
  toString(): string {
    return `cancel(${this.target}#${this.pick})`;
  }
}
