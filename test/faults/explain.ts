/** Why a job ran twice: the fault that explains a duplicate execution (analyze.ts). */
import type { Done, Exec } from './logs.js';
import { GLOBAL_FAULTS, overlaps, type Fault } from './records.js';

export function explainDuplicate(
  prev: Exec,
  cur: Exec,
  faults: Fault[],
  dones: Done[],
): { label: string; recovery?: number } | null {
  // The fault of the first run's process: sent before the re-run, and not over before the first
  // run started (a job can start between a signal's sending and its delivery: `end` is when
  // the process was gone).
  const own = faults.find(
    (f) =>
      f.pid === prev.pid &&
      (f.end ?? f.at) >= prev.at - 5 &&
      f.at <= cur.at &&
      !GLOBAL_FAULTS.has(f.kind),
  );
  if (own?.kind === 'kill9')
    return { label: 'in flight in a SIGKILLed worker', recovery: cur.at - own.at };
  if (own?.kind === 'crash')
    return { label: 'in flight in a worker a poison pill crashed', recovery: cur.at - own.at };
  if (own?.kind === 'sigterm')
    return { label: 'released at graceful shutdown (SIGTERM)', recovery: cur.at - own.at };
  const recreated = dones.find((d) => d.at >= prev.at && d.at <= cur.at);
  const g = faults.find((f) => GLOBAL_FAULTS.has(f.kind) && overlaps(f, prev.at, cur.at));
  // Run again after a completion: only a new incarnation (the add again) can do that — when
  // the job completed twice. (With one completion, the stale holder's complete merely logged
  // before the new holder's run.)
  if (recreated && g && dones.length > 1)
    return { label: 're-created by a re-sent add after it completed' };
  if (g) {
    const label =
      g.kind === 'pause'
        ? 'lease expired during CLIENT PAUSE'
        : g.kind === 'redis-kill'
          ? 'in flight across a Redis restart'
          : 'in flight across a dropped connection';
    return { label };
  }
  return null;
}
