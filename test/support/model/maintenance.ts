/** Steps about time and upkeep: clean(), repair(), waiting for Redis time; the final drain. */
import { expect } from '@jest/globals';
import { waitFor } from '../wait.js';
import { checkAll } from './check.js';
import { lookNoted, redisTime, type Real } from './snapshot.js';
import { Checked, LeaseStep } from './commands.js';
import { GroupAdmin } from './group-steps.js';
import type { CleanCounts, FlowCleanCounts, Model } from './model.js';
import { GRACE_MS } from './flows.js';

/**
 * clean() runs at a Redis time we do not see: bracket it with TIME before and after, and find
 * the one time in between whose effects the report matches (where counts change is known).
 */
export class Clean extends Checked {
  async act(m: Model, r: Real): Promise<void> {
    const t0 = await redisTime(r);
    const report = await r.q.clean();
    const t1 = await redisTime(r);
    const { deadLettered, resultsExpired, completedTrimmed, flows, ...counts } = report;
    // The completions trimmed the kept jobs to the count; none ages in a run.
    expect({
      deadLettered,
      resultsExpired,
      completedTrimmed,
      dropped: flows?.reservationsDropped ?? 0,
    }).toEqual({ deadLettered: 0, resultsExpired: 0, completedTrimmed: 0, dropped: 0 });
    // A first look at a silence of every beat notes its Redis time: then that is when it ran.
    // (Not known from the bracket: a report with nobody judged fits many times.)
    const looked = await lookNoted(r);
    const all = [t0, ...m.timeEvents().filter((t) => t > t0 && t <= t1)].sort((a, b) => a - b);
    const times =
      looked !== m.heartbeats.looked ? [looked] : all.filter((t) => !m.heartbeats.firstLookAt(t));
    const same = (a: CleanCounts) =>
      (Object.keys(a) as Array<keyof CleanCounts>).every((k) => a[k] === counts[k]);
    const now = times.find((t) => same(m.cleanReportAt(t)));
    if (now === undefined) {
      const expected = times.map((t) => ({ t, ...m.cleanReportAt(t) }));
      throw new Error(
        `clean() reported ${JSON.stringify(counts)}; between Redis times ${t0} and ${t1} the model expects one of ${JSON.stringify(expected)}`,
      );
    }
    m.cleanAt(now);
    expect({ firstLook: m.heartbeats.looked }).toEqual({ firstLook: looked });
    // Flows are clean()'s last step, at a Redis time no earlier.
    const flowCounts = { notices: flows?.notices ?? 0, cancelled: flows?.cancelled ?? 0 };
    const sameFlows = (a: FlowCleanCounts) =>
      a.notices === flowCounts.notices && a.cancelled === flowCounts.cancelled;
    const flowTimes = [now, ...all.filter((t) => t > now)];
    const tf = flowTimes.find((t) => sameFlows(m.flowCleanReportAt(t)));
    if (tf === undefined) {
      const expected = flowTimes.map((t) => ({ t, ...m.flowCleanReportAt(t) }));
      throw new Error(
        `clean() reported flows ${JSON.stringify(flowCounts)}; the model expects one of ${JSON.stringify(expected)}`,
      );
    }
    m.flows.due(m, tf);
    for (const [k, v] of Object.entries({ ...counts, ...flowCounts }))
      if (v > 0) r.note(`clean: ${k}`);
  }
  toString(): string {
    return 'clean()';
  }
}

/** (f) repair finds nothing to fix; it drops the tombstones of cancelled jobs. */
export class Repair extends Checked {
  async act(m: Model, r: Real): Promise<void> {
    const report = await r.q.repair();
    expect(report.fixes).toEqual([]);
    expect(report.tombstones).toBe(m.repair());
    if (report.tombstones > 0) r.note('repair: dropped tombstones');
  }
  toString(): string {
    return 'repair()';
  }
}

/**
 * Let Redis time reach the next due time, lease deadline or heartbeat lapse, if one comes
 * within 300 ms (`all`: the last of those).
 */
export class Advance extends Checked {
  constructor(readonly all = false) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const now = await redisTime(r);
    const soon = m.timeEvents().filter((t) => t > now && t <= now + 300);
    const next = this.all ? Math.max(...soon) : Math.min(...soon);
    if (!Number.isFinite(next)) return r.note('advance: nothing due soon');
    r.note('advance: waited');
    await waitFor(async () => (await redisTime(r)) >= next, {
      intervalMs: 5,
      what: `Redis time ${next}`,
    });
  }
  toString(): string {
    return this.all ? 'advance(all)' : 'advance()';
  }
}

/**
 * After the random steps: nothing is lost. Once every short lease, retry delay and heartbeat
 * has run out and clean() ran, every job (but long-delayed and dead ones) is leased to us,
 * and each of our leases completes it (dead clients' long leases are completed by them,
 * as a zombie would); a flow parent then runs too (its children's notices delivered by the
 * completes), but one that waits for a long-delayed child.
 */
export async function drain(m: Model, r: Real): Promise<void> {
  // Groups' limits and pauses would hold jobs back from the leases below.
  for (const g of [...m.groups.conc.keys()]) await new GroupAdmin(g, 'conc', null).run(m, r);
  for (const g of [...m.groups.paused]) await new GroupAdmin(g, 'resume', null).run(m, r);
  // (Twice: a first clean that finds every beat silent judges nobody; one half a timeout later does.)
  for (let i = 0; i < 2; i++) {
    await new Advance(true).run(m, r);
    await new Clean().run(m, r);
  }
  do {
    while ([...m.jobs.values()].some((j) => j.state === 'pending'))
      await new LeaseStep(10_000, 60_000).run(m, r);
    for (const lease of m.leases.filter((l) => m.isCurrent(l))) {
      expect({ drain: lease.id, completed: await r.q.complete(lease) }).toEqual({
        drain: lease.id,
        completed: m.complete(lease),
      });
      await m.kept.finish(r.q, r.redis);
      if (m.flows.parentOf.has(lease.seq)) m.flows.deliver(m, [lease.seq]);
    }
    // Notices a dead client left undelivered: clean() delivers them after the grace.
    const left = [...m.flows.undelivered.values()].map((n) => n.at! + GRACE_MS);
    if (left.length > 0) {
      const due = Math.max(...left);
      await waitFor(async () => (await redisTime(r)) >= due, { what: `Redis time ${due}` });
      await new Clean().run(m, r);
    }
  } while ([...m.jobs.values()].some((j) => j.state === 'pending'));
  await checkAll(m, r);
  const now = await redisTime(r);
  const later = (seq: string) => {
    const j = m.jobs.get(seq);
    return j?.state === 'delayed' && j.due! > now;
  };
  const left = [...m.jobs.values()].filter(
    (j) =>
      j.state !== 'dead' &&
      !later(j.seq) &&
      !(j.state === 'waiting-children' && m.flows.parents.get(j.seq)?.awaited.some(later)),
  );
  expect(left).toEqual([]);
}
