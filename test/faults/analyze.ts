/**
 * Checking what the fault suite's logs (logs.ts) say against what the producer was told.
 * Pure functions (no Redis), so the rules are in one place.
 */
import { explainDuplicate } from './explain.js';
import type { Done, Exec, LogEvent, Logs } from './logs.js';
import {
  key,
  overlaps,
  GLOBAL_FAULTS,
  type DeadEntry,
  type Fault,
  type JobRec,
} from './records.js';

export interface Analysis {
  acked: number;
  refused: number;
  completed: number;
  cancelled: number;
  lost: number;
  /** Acked jobs completed in Redis whose `completed` event never fired (reply lost). */
  unseen: number;
  dupCompletions: number;
  dupCompletionsExplained: number;
  dupExecs: number;
  dupExecsExplained: number;
  /** Jobs created by an add whose reply never arrived (not acknowledged), by key. */
  extraJobs: number;
  dead: number;
  causes: Map<string, number>;
  deadReasons: Map<string, number>;
  recovery: number[];
  violations: string[];
  /** Acked adds with no trace at all at the end (for the everysec report). */
  vanished: JobRec[];
}

function tally(m: Map<string, number>, k: string, n = 1): void {
  m.set(k, (m.get(k) ?? 0) + n);
}

export interface AnalyzeInput {
  jobs: JobRec[];
  logs: Logs;
  faults: Fault[];
  dead: DeadEntry[];
  /** Explains a dead-letter reason for a job, or returns null (a violation). */
  deadOk(reason: string, job: JobRec | undefined, faultsInLife: Fault[]): string | null;
  /** Extra recovery samples computed by the scenario (e.g. hung jobs' re-runs). */
  recoveryOf?(logs: Logs, jobs: JobRec[]): number[];
  /** Whether an add/cancel call that overlapped a fault counts as "outcome unknown". */
  lenientCalls: boolean;
  /**
   * `queue\tid` of every job whose result Redis stored (`storeResults` on): proof that its
   * complete ran, for jobs whose `completed` event was never logged. Undefined when off.
   */
  results?: ReadonlySet<string>;
}

/** Check every acknowledged job against the logs and the dead-letter set. */
export function analyze(input: AnalyzeInput): Analysis {
  const { jobs, logs, faults, dead } = input;
  const a: Analysis = {
    acked: 0,
    refused: 0,
    completed: 0,
    cancelled: 0,
    lost: 0,
    unseen: 0,
    dupCompletions: 0,
    dupCompletionsExplained: 0,
    dupExecs: 0,
    dupExecsExplained: 0,
    extraJobs: 0,
    dead: 0,
    causes: new Map(),
    deadReasons: new Map(),
    recovery: [],
    violations: [],
    vanished: [],
  };
  const global = faults.filter((f) => GLOBAL_FAULTS.has(f.kind));
  const acrossFault = (from: number, to: number) => global.some((f) => overlaps(f, from, to));
  const execBy = new Map<string, Exec[]>();
  for (const e of logs.execs) {
    const list = execBy.get(key(e.queue, e.id)) ?? [];
    list.push(e);
    execBy.set(key(e.queue, e.id), list);
  }
  const doneBy = new Map<string, Done[]>();
  for (const d of logs.dones) {
    const list = doneBy.get(key(d.queue, d.id)) ?? [];
    list.push(d);
    doneBy.set(key(d.queue, d.id), list);
  }
  const lostReply = new Map<string, LogEvent[]>();
  for (const ev of logs.events) {
    if (ev.kind === 'L' && /completed or cancelled elsewhere/.test(ev.fields[0] ?? '')) {
      const list = lostReply.get(key(ev.queue, ev.id)) ?? [];
      list.push(ev);
      lostReply.set(key(ev.queue, ev.id), list);
    }
  }
  const deadBy = new Map(dead.map((d) => [key(d.queue, d.id), d]));
  const ackedKeys = new Set<string>();
  const byK = new Map(jobs.map((j) => [`${j.queue}\t${j.k}`, j]));

  for (const j of jobs) {
    if (j.ackId === undefined) {
      a.refused += 1;
      continue;
    }
    a.acked += 1;
    const kk = key(j.queue, j.ackId);
    ackedKeys.add(kk);
    const execs = execBy.get(kk) ?? [];
    const dones = doneBy.get(kk) ?? [];
    const addAcrossFault = j.tries.some((t) => acrossFault(t.sent, t.settled));
    const cancelUnknown =
      j.cancel !== undefined &&
      (j.cancel.result === 'error' ||
        (input.lenientCalls && acrossFault(j.cancel.sent, j.cancel.settled)));
    const cancelled = j.cancel?.result === true && !cancelUnknown;
    if (cancelled && dones.some((d) => d.at > j.cancel!.settled)) {
      a.violations.push(`${kk}: completed after cancel() returned true`);
    }
    if (dones.length > 0) a.completed += 1;
    if (dones.length > 1) {
      a.dupCompletions += 1;
      // Two completions are two incarnations: the add was re-sent (by ioredis, after a dropped
      // connection) after the first incarnation had completed, or Redis forgot the completion.
      if (input.lenientCalls && (addAcrossFault || acrossFault(dones[0]!.at, dones.at(-1)!.at))) {
        a.dupCompletionsExplained += 1;
        // Same payload try: ioredis re-sent the add after reconnecting; another try: the
        // producer's own retry of an add that had in fact been stored.
        const sameTry = new Set(dones.map((d) => d.t)).size === 1;
        tally(
          a.causes,
          sameTry
            ? 'completed twice: the add, re-sent by ioredis after a dropped connection, re-created the job after it had completed'
            : 'completed twice: the producer retried an add that had been stored, after the job completed',
        );
      } else {
        a.violations.push(
          `${kk}: completed ${dones.length} times (pids ${dones.map((d) => d.pid).join(',')})`,
        );
      }
    }
    if (dones.length === 0) {
      const d = deadBy.get(kk);
      const lifeEnd = Math.max(j.ackAt ?? 0, ...execs.map((e) => e.at)) + 1;
      const inLife = faults.filter((f) => overlaps(f, j.tries[0]!.sent, lifeEnd + 60_000));
      if (cancelled || cancelUnknown) {
        a.cancelled += 1;
      } else if (d) {
        const why = input.deadOk(d.reason, j, inLife);
        if (why) {
          a.dead += 1;
          tally(a.deadReasons, why);
        } else {
          a.violations.push(`${kk}: dead-lettered with an unexplained reason: ${d.reason}`);
        }
      } else if (input.results?.has(kk) && execs.length > 0) {
        // Completed in Redis (its result is stored), but no `completed` event: the process that
        // ran the complete was killed before it saw the reply, or the reply was lost with the
        // connection and ioredis re-sent the complete, which then found no job.
        const last = execs.at(-1)!;
        const killed = faults.find(
          (f) =>
            (f.kind === 'kill9' || f.kind === 'crash') && f.pid === last.pid && f.at >= last.at,
        );
        const ev = lostReply.get(kk)?.[0];
        if (killed) {
          a.unseen += 1;
          tally(a.causes, 'completed in Redis; worker SIGKILLed before its completed event');
        } else if (ev && acrossFault(last.at, ev.at)) {
          a.unseen += 1;
          tally(a.causes, 'complete reply lost; re-sent complete returned false');
        } else if (acrossFault(last.at, last.at + 10_000)) {
          a.unseen += 1;
          tally(a.causes, 'completed in Redis; reply lost in a fault');
        } else {
          a.lost += 1;
          a.violations.push(`${kk}: completed in Redis but no completed event and no fault`);
        }
      } else {
        a.lost += 1;
        if (execs.length === 0) a.vanished.push(j);
        a.violations.push(
          `${kk}: LOST (acked at ${j.ackAt}, ${execs.length} executions, no completion, not dead)`,
        );
      }
    }
  }

  // Jobs nobody acknowledged: an add whose reply was lost and that was re-sent (or failed).
  const extraKs = new Set<string>();
  for (const [kk, execs] of execBy) {
    if (ackedKeys.has(kk)) continue;
    const e = execs[0]!;
    const j = byK.get(`${e.queue}\t${e.k}`);
    extraKs.add(kk);
    const explained =
      j !== undefined &&
      (j.tries.some((t) => !t.ok) || j.tries.some((t) => acrossFault(t.sent, t.settled)));
    if (!explained) a.violations.push(`${kk}: executed but never added (k=${e.k})`);
    if ((doneBy.get(kk)?.length ?? 0) > 1) a.violations.push(`${kk}: extra job completed twice`);
  }
  a.extraJobs = extraKs.size;

  // Duplicate executions: the same incarnation, attempt and payload run more than once.
  for (const [kk, execs] of execBy) {
    const groups = new Map<string, Exec[]>();
    for (const e of execs) {
      const g = `${e.t}\t${e.attempt}`;
      const list = groups.get(g) ?? [];
      list.push(e);
      groups.set(g, list);
    }
    for (const list of groups.values()) {
      for (let i = 1; i < list.length; i++) {
        a.dupExecs += 1;
        const prev = list[i - 1]!;
        const cur = list[i]!;
        const cause = explainDuplicate(prev, cur, faults, doneBy.get(kk) ?? []);
        if (cause) {
          a.dupExecsExplained += 1;
          tally(a.causes, cause.label);
          if (cause.recovery !== undefined) a.recovery.push(cause.recovery);
        } else {
          a.violations.push(
            `${kk}: run twice without a fault (pid ${prev.pid} at ${prev.at}, pid ${cur.pid} at ${cur.at}, attempt ${cur.attempt})`,
          );
        }
      }
    }
  }
  if (input.recoveryOf) a.recovery.push(...input.recoveryOf(logs, jobs));
  return a;
}

/** The q-quantile (nearest rank) of values, or NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
