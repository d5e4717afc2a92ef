/**
 * Issue 12's measurements of a finished scenario run (metrics.ts does the counting): recovery of
 * the jobs a SIGKILLed worker held, dead-lettered bystanders, the slowest add→start, the drain
 * after the last add, adds completed twice; each a violation only where the scenario asserts it.
 */
import { quantile, type Analysis } from './analyze.js';
import { fmt } from './common.js';
import { deadBystanders, dupAdds, heldRecovery, reconcile } from './metrics.js';
import type { Ctx } from './ctx.js';

export interface Measured {
  bystanders?: number;
  slowestAddToStart: number;
  drainedAfterLastAdd: number;
  dupAdds: number;
  dupAddsTwoJobs: number;
}

/** Issue 12's measurements (metrics.ts), and their violations where the scenario asserts them. */
export function measure(ctx: Ctx, a: Analysis): Measured {
  const s = ctx.s;
  const logs = ctx.logs!;
  if (s.heldRecovery) {
    const r = heldRecovery(logs, ctx.kills);
    a.recovery = r.samples;
    ctx.note(
      `recovery: ${r.samples.length} held jobs re-run (${r.handOffs} of them hand-offs not adopted at the kill); ${r.notRerun} held jobs never re-ran (completed in Redis, cancelled or dead)`,
    );
    const p50 = quantile(r.samples, 0.5);
    const max = r.samples.length ? Math.max(...r.samples) : NaN;
    if (s.assertRecovery && (p50 > 3_000 || max > 5_000))
      ctx.violation(`recovery p50 ${fmt(p50)} / max ${fmt(max)}: over 3 s / 5 s`);
  }
  let bystanders: number | undefined;
  if (s.bystanders) {
    const exclude = new Set(
      ctx.jobs
        .filter((j) => j.ackId !== undefined && s.bystanders!.exclude.includes(j.b))
        .map((j) => `${j.queue}\t${j.ackId}`),
    );
    const found = deadBystanders(logs, ctx.faults, ctx.dead, exclude);
    bystanders = found.length;
    if (found.length > 0)
      ctx.note(
        `dead-lettered bystanders (never died alone): ${found.slice(0, 10).join(', ').replace(/\t/g, '/')}`,
      );
    if (s.assertBystanders && found.length > 0)
      ctx.violation(`${found.length} bystander(s) dead-lettered for expired leases`);
  }
  const rec = reconcile(logs, ctx.jobs);
  if (s.assertReconcile && !(rec.slowestAddToStart <= 5_000))
    ctx.violation(`slowest add→start ${fmt(rec.slowestAddToStart)} (${rec.slowestJob}): over 5 s`);
  const dup = dupAdds(logs);
  if (s.assertNoDupAdds && dup.adds > 0)
    ctx.violation(`${dup.adds} add(s) completed more than once (${dup.twoJobs} as two jobs)`);
  return {
    bystanders,
    slowestAddToStart: rec.slowestAddToStart,
    drainedAfterLastAdd: rec.drainedAfterLastAdd,
    dupAdds: dup.adds,
    dupAddsTwoJobs: dup.twoJobs,
  };
}
