/**
 * The steps of test/integration/model/model.test.ts: each one runs an operation on the real queue,
 * compares the outcome with the model, updates the model, then runs every check (check.ts).
 * Here: adds, leases and cancels; the steps on a lease handed out before are in lease-steps.ts;
 * clean, repair and waits for Redis time are in maintenance.ts, client deaths in death.ts.
 */
import { expect } from '@jest/globals';
import fc from 'fast-check';
import type { AddOptions } from '../../../lib/index.js';
import { checkAll } from './check.js';
import { lookNoted, redisTime, type Real } from './snapshot.js';
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
export function tookAsModelSays(m: Model, jobs: Leased[], count: number, now: number): void {
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
    // Asking whether a lapsed worker holds it may be a first look at a silence of every beat.
    const looked = await lookNoted(r);
    if (looked !== m.heartbeats.looked) m.heartbeats.lookNoted(looked);
    r.note(`cancel: ${pool.length > 0 ? this.target : 'never'} -> ${got}`);
  }
  toString(): string {
    return `cancel(${this.target}#${this.pick})`;
  }
}
