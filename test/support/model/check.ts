/**
 * The checks run after EVERY step of test/integration/model/model.test.ts:
 * (b) the structural invariants of the README's Guarantees, read straight from the Redis keys;
 * the keys equal to what the model says, entry for entry (lists in order, tombstones too)
 * (both in expected-keys.ts, of a snapshot.ts); (a) getJob of the ids ever added; (e) counts().
 */
import { expect } from '@jest/globals';
import type { Model } from './model.js';
import { expectedKeys, invariantViolations } from './expected-keys.js';
import { redisTime, snapshot, type FlowKeys, type Real } from './snapshot.js';

/** JSON with object keys sorted (undefined values dropped, as toEqual ignores them). */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );
}

/** expect(got).toEqual(want), with a cheap first look (a deep toEqual of big keys is slow). */
function sameAs(got: unknown, want: unknown): void {
  if (canonical(got) !== canonical(want)) expect(got).toEqual(want);
}

/**
 * The flow notice keys hold what the model says: the same entries; their times, read back into
 * the model where it did not know them (the queue's Redis time), else equal.
 */
function checkFlowKeys(m: Model, r: Real, k: FlowKeys): void {
  const f = m.flows;
  const queue = r.q.name;
  const adopt = <V>(
    what: string,
    got: Record<string, number>,
    want: Map<string, V>,
    field: keyof V,
  ) => {
    sameAs({ what, entries: Object.keys(got).sort() }, { what, entries: [...want.keys()].sort() });
    for (const [seq, v] of want) {
      const t = got[seq]!;
      if (v[field] === undefined) (v as Record<keyof V, unknown>)[field] = t;
      else expect({ what, seq, t }).toEqual({ what, seq, t: v[field] });
    }
  };
  adopt('notices not delivered', k.undelivered, f.undelivered, 'at');
  adopt('notices to deliver again', k.rechecks, f.rechecks, 'due');
  const cancels: Record<string, number> = {};
  for (const [member, t] of Object.entries(k.cancels)) {
    expect(member.startsWith(`${queue}:`)).toBe(true);
    cancels[member.slice(queue.length + 1)] = t;
  }
  adopt('children to cancel', cancels, f.cancels, 'at');
  const outbox = [...f.undelivered.keys(), ...f.rechecks.keys()].sort();
  sameAs({ outbox: k.outbox }, { outbox });
}

/** Every check, after every step. */
export async function checkAll(m: Model, r: Real): Promise<void> {
  const { flows, ...s } = await snapshot(r);
  expect(invariantViolations(s)).toEqual([]);
  sameAs({ ...s, meta: undefined }, { ...expectedKeys(m), meta: undefined });
  checkFlowKeys(m, r, flows);

  // (c) complete returned true at most once per incarnation.
  for (const [seq, n] of m.completedTrue)
    if (n !== 1) throw new Error(`complete returned true ${n} times for job ${seq}`);

  // (a) getJob of every id ever added, but for jobs far back in a long pending list (their
  // place is checked above, entry for entry): a bulk of 2 000 jobs would cost seconds a step.
  const front = new Set([
    ...m.lists.flatMap((l) => l.slice(0, 30)),
    ...[...m.groups.pending.values()].flatMap((ws) => ws.slice(0, 30).map((w) => w.seq)),
  ]);
  const ids = [...m.publicIds].filter((id) => {
    const job = m.byPublicId(id);
    return !job || job.state !== 'pending' || front.has(job.seq);
  });
  const infos = await Promise.all(ids.map((id) => r.q.getJob(id)));
  const now = await redisTime(r);
  ids.forEach((id, i) => {
    const job = m.byPublicId(id);
    const info = infos[i];
    const kept = job ? undefined : m.kept.byPublicId(id);
    if (!job && !kept) {
      expect({ id, info }).toEqual({ id, info: null });
      return;
    }
    const got: Record<string, unknown> = { ...info };
    delete got.leaseExpiries; // not modelled: its rules are changing
    delete got.lastError;
    delete got.deadReason;
    delete got.name;
    if (kept) {
      sameAs(got, {
        id,
        state: 'completed',
        data: kept.data,
        priority: kept.priority,
        attemptsMade: kept.attemptsMade,
        progress: kept.progress,
        at: kept.finishedAt,
        finishedAt: kept.finishedAt,
        addedAt: kept.addedAt ?? got.addedAt,
        startedAt: kept.startedAt,
        processedBy: kept.processedBy,
        ...(kept.group === undefined ? {} : { group: kept.group }),
        ...(kept.parent === undefined ? {} : { parent: { queue: r.q.name, id: kept.parent } }),
      });
      checkTimes(id, [kept.addedAt, kept.startedAt, kept.finishedAt], now);
      return;
    }
    // Its added time is read back once (within the add call), then never changes.
    if (job!.addedAt === undefined) {
      const [t0, t1] = job!.addedWithin!;
      const added = info?.addedAt ?? 0;
      expect({ id, added, within: added >= t0 && added <= t1 }).toEqual({
        id,
        added,
        within: true,
      });
      job!.addedAt = added;
    }
    const want: Record<string, unknown> = {
      id,
      state: job!.state,
      data: job!.data,
      priority: job!.priority,
      attemptsMade: job!.attempts,
      progress: job!.progress,
      addedAt: job!.addedAt,
      startedAt: job!.startedAt,
      processedBy: job!.state === 'leased' ? job!.lease!.workerId : job!.lastWorker,
    };
    if (job!.group !== undefined) want.group = job!.group;
    if (job!.state === 'leased') want.at = job!.deadline;
    if (job!.state === 'delayed') want.at = job!.due;
    const child = m.flows.parentOf.get(job!.seq);
    if (child) want.parent = { queue: r.q.name, id: child.parent };
    const counts = m.flows.parents.get(job!.seq)?.counts;
    if (counts) want.children = counts;
    if (['pending', 'dead', 'waiting-children'].includes(job!.state)) delete got.at;
    // A dead job's finishedAt is its death time (not modelled): after its start, before now.
    if (job!.state === 'dead') {
      checkTimes(id, [job!.addedAt, job!.startedAt, got.finishedAt as number], now);
      delete got.finishedAt;
    } else checkTimes(id, [job!.addedAt, job!.startedAt], now);
    sameAs(got, want);
  });

  // The kept completed jobs, newest first (a page).
  const page = await r.q.getJobs('completed', { limit: 10 });
  expect(page.map((j) => j.id)).toEqual(
    m.kept
      .newestFirst()
      .slice(0, 10)
      .map((k) => k.id),
  );

  // (e) counts() agrees (pending counts include tombstones, as documented).
  const c = await r.q.counts();
  const byPrio = m.lists.map((l, p) => l.length + (m.groups.counts.get(p) ?? 0));
  const count = (state: string) => [...m.jobs.values()].filter((j) => j.state === state).length;
  expect({ ...c, workers: 0 }).toEqual({
    pendingByPriority: byPrio,
    pending: byPrio.reduce((a, b) => a + b, 0),
    delayed: count('delayed'),
    leased: count('leased'),
    dead: count('dead'),
    workers: 0,
    completed: m.kept.jobs.size,
    waitingChildren: count('waiting-children'),
  });
}

/** A job's times in order (added ≤ started ≤ finished; unknown ones skipped), none after now. */
function checkTimes(id: string, times: Array<number | undefined>, now: number): void {
  const known = times.filter((t): t is number => t !== undefined);
  const sorted = [...known].sort((a, b) => a - b);
  expect({ id, times: known, ok: known.join() === sorted.join() && sorted.at(-1)! <= now }).toEqual(
    {
      id,
      times: known,
      ok: true,
    },
  );
}
