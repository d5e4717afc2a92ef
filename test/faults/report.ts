/** The fault suite's report (run.ts): the table of every scenario's figures, a faults summary. */
import { quantile, type Analysis } from './analyze.js';
import { fmt } from './common.js';
import type { Ctx, Scenario } from './ctx.js';
import type { Measured } from './measure.js';
import type { Fault } from './records.js';

export interface Row {
  s: Scenario;
  a: Analysis;
  m: Measured;
  ctx: Ctx;
  seconds: number;
}

export function table(rows: Row[]): string {
  const head = [
    'scenario',
    'jobs',
    'lost',
    'dup compl. (explained)',
    'dup runs (explained)',
    'unseen',
    'dead',
    'cancelled',
    'recovery p50 / p90 / max',
    'bystanders dead',
    'add→start max',
    'drained after last add',
    'dup completions (2 jobs)',
    're-runs after end',
    'resume p50 / max: restart | kill',
    'time',
  ];
  const body = rows.map(({ s, a, m, seconds }) => [
    s.id + (s.reportOnly ? ' (report)' : ''),
    String(a.acked),
    String(a.lost),
    `${a.dupCompletions} (${a.dupCompletionsExplained})`,
    `${a.dupExecs} (${a.dupExecsExplained})`,
    String(a.unseen),
    String(a.dead),
    String(a.cancelled),
    `${fmt(quantile(a.recovery, 0.5))} / ${fmt(quantile(a.recovery, 0.9))} / ${fmt(a.recovery.length ? Math.max(...a.recovery) : NaN)}`,
    m.bystanders === undefined ? '–' : String(m.bystanders),
    fmt(m.slowestAddToStart),
    fmt(m.drainedAfterLastAdd),
    `${m.dupAdds} (${m.dupAddsTwoJobs})`,
    String(m.rerunsAfterEnd),
    `${p50max(m.resume.afterRestart)} | ${p50max(m.resume.afterKill)}`,
    `${seconds.toFixed(0)} s`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('-|-'), ...body.map(line)].join('\n');
}

function p50max(xs: number[]): string {
  return xs.length === 0 ? '–' : `${fmt(quantile(xs, 0.5))} / ${fmt(Math.max(...xs))}`;
}

export function summarizeFaults(faults: Fault[]): string {
  const m = new Map<string, number>();
  for (const f of faults) m.set(f.kind, (m.get(f.kind) ?? 0) + 1);
  return [...m].map(([k, n]) => `${k} ×${n}`).join(', ') || 'none (handler behaviours only)';
}
