/**
 * Issue 12's measurements of a finished scenario run (metrics.ts and deaths.ts do the counting):
 * recovery of the jobs a SIGKILLed worker held, dead-lettered bystanders, the slowest add→start,
 * the drain after the last add, adds completed twice; issue 24's: how soon work resumed after
 * each Redis restart and each connection kill, and jobs run again after a handler had ended.
 * Each a violation only where the scenario asserts it.
 */
import { quantile, type Analysis } from './analyze.js';
import { fmt } from './common.js';
import { deadBystanders, heldRecovery } from './deaths.js';
import { dupAdds, reconcile, rerunsAfterEnd, resume, type Resume } from './metrics.js';
import type { Ctx } from './ctx.js';

export interface Measured {
  bystanders?: number;
  slowestAddToStart: number;
  drainedAfterLastAdd: number;
  dupAdds: number;
  dupAddsTwoJobs: number;
  resume: Resume;
  /** Runs after a handler of the same attempt had ended (SIGKILLed processes excepted). */
  rerunsAfterEnd: number;
}

/** Resume targets after a Redis restart (`assertResume`), ms. */
const RESUME_P50_MS = 300;
const RESUME_MAX_MS = 1_000;

/**
 * Issue 12's measurements (metrics.ts, deaths.ts), and their violations where the scenario
 * asserts them.
 */
export function measure(ctx: Ctx, a: Analysis): Measured {
  const s = ctx.s;
  const logs = ctx.logs!;
  if (s.heldRecovery) {
    const r = heldRecovery(logs, ctx.kills);
    a.recovery = r.samples;
    ctx.note(
      `recovery: ${r.samples.length} held jobs re-run (${r.handOffs} of them hand-offs not adopted at the kill; ${r.graced} of a worker killed in its start-up grace, counted from its end); ${r.notRerun} held jobs never re-ran (completed in Redis, cancelled or dead)`,
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
  const res = resume(logs, ctx.faults);
  for (const kind of ['redis-kill', 'client-kill-normal'] as const) {
    const each = res.faults.filter((f) => f.kind === kind);
    if (each.length === 0) continue;
    ctx.note(
      `resume after each ${kind === 'redis-kill' ? 'Redis restart' : 'CLIENT KILL'} (first worker / slowest worker): ` +
        each.map((f) => `${fmt(f.first)}/${fmt(f.slowest)}`).join(', '),
    );
  }
  const r50 = quantile(res.afterRestart, 0.5);
  const rMax = res.afterRestart.length ? Math.max(...res.afterRestart) : NaN;
  if (s.assertResume && !(r50 <= RESUME_P50_MS && rMax <= RESUME_MAX_MS))
    ctx.violation(
      `resume after a Redis restart p50 ${fmt(r50)} / max ${fmt(rMax)}: over ${fmt(RESUME_P50_MS)} / ${fmt(RESUME_MAX_MS)}`,
    );
  const reruns = rerunsAfterEnd(logs, ctx.faults);
  for (const x of reruns.slice(0, 5))
    ctx.note(
      `run again after its handler ended: ${x.job.replace('\t', '/')} attempt ${x.attempt}, ended in ${x.pid} at ${x.endedAt}, re-run in ${x.rerunPid} ${x.rerunAt - x.endedAt} ms later`,
    );
  if (s.assertNoRerunAfterEnd && reruns.length > 0)
    ctx.violation(`${reruns.length} job(s) run again after a handler of that attempt had ended`);
  const dup = dupAdds(logs);
  if (s.assertNoDupAdds && dup.adds > 0)
    ctx.violation(`${dup.adds} add(s) completed more than once (${dup.twoJobs} as two jobs)`);
  return {
    bystanders,
    slowestAddToStart: rec.slowestAddToStart,
    drainedAfterLastAdd: rec.drainedAfterLastAdd,
    dupAdds: dup.adds,
    dupAddsTwoJobs: dup.twoJobs,
    resume: res,
    rerunsAfterEnd: reruns.length,
  };
}
