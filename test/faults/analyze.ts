/**
 * Reading the fault suite's logs and checking what they say against what the producer was told.
 * Pure functions (no Redis), so the rules are in one place.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Behavior } from './handler.js';

export interface Exec {
  at: number;
  pid: number;
  queue: string;
  id: string;
  k: string;
  t: number;
  attempt: number;
}

export interface Done {
  at: number;
  pid: number;
  queue: string;
  id: string;
  k: string;
  t: number;
}

export interface LogEvent {
  kind: string;
  at: number;
  pid: number;
  queue: string;
  id: string;
  fields: string[];
}

export interface Logs {
  execs: Exec[];
  dones: Done[];
  events: LogEvent[];
}

export function readLogs(dir: string): Logs {
  const logs: Logs = { execs: [], dones: [], events: [] };
  for (const f of readdirSync(dir)) {
    const lines = readFileSync(path.join(dir, f), 'utf8').split('\n');
    for (const line of lines) {
      if (!line) continue;
      const [kind, at, pid, queue, id, ...rest] = line.split('\t') as [
        string,
        string,
        string,
        string,
        string,
        ...string[],
      ];
      const base = { at: Number(at), pid: Number(pid), queue, id };
      if (kind === 'E') {
        logs.execs.push({ ...base, k: rest[0]!, t: Number(rest[1]), attempt: Number(rest[2]) });
      } else if (kind === 'C') {
        logs.dones.push({ ...base, k: rest[0]!, t: Number(rest[1]) });
      } else {
        logs.events.push({ ...base, kind, fields: rest });
      }
    }
  }
  const byTime = (a: { at: number }, b: { at: number }) => a.at - b.at;
  logs.execs.sort(byTime);
  logs.dones.sort(byTime);
  logs.events.sort(byTime);
  return logs;
}

export type FaultKind =
  | 'kill9'
  /** A worker process that died by itself (a handler called process.exit: a poison pill). */
  | 'crash'
  | 'sigterm'
  | 'redis-kill'
  | 'client-kill-normal'
  | 'client-kill-pubsub'
  | 'client-kill-id'
  | 'pause';

export interface Fault {
  kind: FaultKind;
  at: number;
  /** When the fault itself was over (Redis answering again, pause over, process gone). */
  back?: number;
  /**
   * End of the fault's effect window: until clients have reconnected and re-sent what was in
   * flight (ioredis backs off exponentially between reconnect attempts, with jitter).
   */
  end: number;
  /** For faults of one process. */
  pid?: number;
  /**
   * `queue\tid` of the jobs leased or handed off when the fault hit (read right after a
   * connection kill, right before a Redis kill): starts of these do not count as resuming.
   */
  held?: ReadonlySet<string>;
}

/** Faults that hit every client (not one process). */
export const GLOBAL_FAULTS: ReadonlySet<FaultKind> = new Set([
  'redis-kill',
  'client-kill-normal',
  'client-kill-pubsub',
  'client-kill-id',
  'pause',
]);

export interface AddTry {
  t: number;
  sent: number;
  settled: number;
  ok: boolean;
  added?: boolean;
  id?: string;
  err?: string;
}

export interface JobRec {
  queue: string;
  k: string;
  cid: boolean;
  b: Behavior;
  ms: number;
  priority: number;
  delayMs?: number;
  bulk: boolean;
  tries: AddTry[];
  ackId?: string;
  ackAt?: number;
  cancel?: { sent: number; settled: number; result: boolean | 'error' };
}

export interface DeadEntry {
  queue: string;
  id: string;
  reason: string;
}

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

const key = (queue: string, id: string) => `${queue}\t${id}`;

function overlaps(f: Fault, from: number, to: number): boolean {
  return f.at <= to && f.end >= from;
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

function explainDuplicate(
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

/** The q-quantile (nearest rank) of values, or NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
