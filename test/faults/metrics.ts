/**
 * Measurements the fault suite reports per scenario (issues 12 and 24), from the logs and what
 * the producer was told. Pure functions, like analyze.ts: add→start latency, drain time after the
 * last add, adds completed more than once, how soon work resumed after a Redis restart or a
 * connection kill, jobs run again after a handler had ended. Those around killed workers
 * (recovery of the jobs a killed worker held, dead-lettered bystanders) are in deaths.ts.
 */
import { DEATHS } from './deaths.js';
import type { Exec, LogEvent, Logs } from './logs.js';
import { key, type Fault, type JobRec } from './records.js';

export interface Reconcile {
  /** Acknowledged add → its first execution (minus the job's delay), the slowest. */
  slowestAddToStart: number;
  slowestJob: string;
  /** The last acknowledged add → the last completion. */
  drainedAfterLastAdd: number;
}

export function reconcile(logs: Logs, jobs: readonly JobRec[]): Reconcile {
  const first = new Map<string, number>();
  for (const e of logs.execs)
    if (!first.has(key(e.queue, e.id))) first.set(key(e.queue, e.id), e.at);
  const r: Reconcile = { slowestAddToStart: Number.NaN, slowestJob: '', drainedAfterLastAdd: NaN };
  let lastAck = 0;
  for (const j of jobs) {
    if (j.ackId === undefined || j.ackAt === undefined) continue;
    lastAck = Math.max(lastAck, j.ackAt);
    const start = first.get(key(j.queue, j.ackId));
    if (start === undefined) continue;
    const wait = start - j.ackAt - (j.delayMs ?? 0);
    if (!(wait <= r.slowestAddToStart)) {
      r.slowestAddToStart = wait;
      r.slowestJob = `${j.queue}/${j.ackId}`;
    }
  }
  const lastDone = logs.dones.at(-1)?.at;
  if (lastDone !== undefined && lastAck > 0) r.drainedAfterLastAdd = lastDone - lastAck;
  return r;
}

/**
 * Producer adds completed more than once, over every job the add created: the same job twice
 * (a re-sent add re-created it after it completed) or two jobs (an add without a caller id,
 * re-sent by ioredis after a reconnect, created a second job).
 */
export function dupAdds(logs: Logs): { adds: number; twoJobs: number } {
  const byAdd = new Map<string, { n: number; ids: Set<string> }>();
  for (const d of logs.dones) {
    const k = `${d.queue}\t${d.k}`;
    const v = byAdd.get(k) ?? { n: 0, ids: new Set<string>() };
    v.n += 1;
    v.ids.add(d.id);
    byAdd.set(k, v);
  }
  let adds = 0;
  let twoJobs = 0;
  for (const v of byAdd.values()) {
    if (v.n > 1) adds += 1;
    if (v.ids.size > 1) twoJobs += 1;
  }
  return { adds, twoJobs };
}

/** Resume samples (ms) per kind of fault: see `resume`. */
export interface Resume {
  /** Redis back (restarted on its address) → each worker process's first job started after it. */
  afterRestart: number[];
  /** `CLIENT KILL TYPE normal` → each worker process's first job started after it. */
  afterKill: number[];
  /** Per fault, in order: its kind, the first start in any process, the slowest process. */
  faults: Array<{ kind: Fault['kind']; first: number; slowest: number }>;
}

/**
 * How soon work resumed after each Redis restart and each connection kill: from Redis being back
 * (or the kill) to the first start, in each worker process that ran jobs before the fault, of a
 * job that was not held (leased or handed off) at the fault — a job held then may start from a
 * worker's prefetch without Redis. Per process, so that one worker still waiting to reconnect
 * shows even when the others took the work.
 */
export function resume(logs: Logs, faults: readonly Fault[]): Resume {
  const r: Resume = { afterRestart: [], afterKill: [], faults: [] };
  const byPid = new Map<number, Exec[]>();
  for (const e of logs.execs) {
    const list = byPid.get(e.pid) ?? [];
    list.push(e);
    byPid.set(e.pid, list);
  }
  for (const f of faults) {
    if (f.kind !== 'redis-kill' && f.kind !== 'client-kill-normal') continue;
    const from = f.kind === 'redis-kill' ? f.back! : f.at;
    const samples: number[] = [];
    for (const execs of byPid.values()) {
      if (!(execs[0]!.at < f.at)) continue; // started after the fault
      const first = execs.find((e) => e.at > from && !f.held?.has(key(e.queue, e.id)));
      if (first) samples.push(first.at - from);
    }
    if (samples.length === 0) continue;
    (f.kind === 'redis-kill' ? r.afterRestart : r.afterKill).push(...samples);
    r.faults.push({ kind: f.kind, first: Math.min(...samples), slowest: Math.max(...samples) });
  }
  return r;
}

/** A handler that ended (returned or threw) whose job then ran again, same attempt and add try. */
export interface RerunAfterEnd {
  job: string;
  attempt: number;
  /** The process whose handler ended, and when. */
  pid: number;
  endedAt: number;
  /** The run that followed. */
  rerunPid: number;
  rerunAt: number;
}

/**
 * Runs of a job after a handler of the same attempt (and add try) had ended: its outcome was on
 * its way to Redis, and the job was given back instead (guarantee 11). Except where the process
 * whose handler ended was killed (SIGKILL, or a poison pill) after it ended: its complete may
 * never have reached Redis; and where the run's signal was aborted before its handler ended (its
 * lease was lost, or close() gave up on it). Handler ends are the handler's `R` log lines, aborts
 * its `A` lines (handler.ts).
 */
export function rerunsAfterEnd(logs: Logs, faults: readonly Fault[]): RerunAfterEnd[] {
  const runKey = (queue: string, id: string, attempt: unknown, t: unknown) =>
    `${key(queue, id)}\t${String(attempt)}\t${String(t)}`;
  const runs = new Map<string, Exec[]>();
  for (const e of logs.execs) {
    const k = runKey(e.queue, e.id, e.attempt, e.t);
    const list = runs.get(k) ?? [];
    list.push(e);
    runs.set(k, list);
  }
  // Each end belongs to its run: the last start of the job in that process before it. A run
  // whose signal was aborted first (lease lost, cancelled, abandoned by close()) did not finish
  // as far as the worker knew: its job was rightly given up.
  const execsOf = new Map<string, Exec[]>();
  for (const e of logs.execs) {
    const k = `${e.pid}\t${key(e.queue, e.id)}`;
    const list = execsOf.get(k) ?? [];
    list.push(e);
    execsOf.set(k, list);
  }
  const runAt = (ev: LogEvent) =>
    execsOf
      .get(`${ev.pid}\t${key(ev.queue, ev.id)}`)
      ?.filter((e) => e.at <= ev.at)
      .at(-1);
  const aborted = new Set<Exec | undefined>();
  for (const ev of logs.events) if (ev.kind === 'A') aborted.add(runAt(ev));
  const ends = new Map<Exec, number>();
  for (const ev of logs.events) {
    if (ev.kind !== 'R') continue;
    const own = runAt(ev);
    if (own && !aborted.has(own) && !ends.has(own)) ends.set(own, ev.at);
  }
  const killedAfter = (pid: number, at: number) =>
    faults.some((f) => DEATHS.has(f.kind) && f.pid === pid && f.at >= at);
  const out: RerunAfterEnd[] = [];
  for (const list of runs.values()) {
    for (const e of list) {
      const prev = list.find((p) => {
        const endedAt = ends.get(p);
        return p !== e && endedAt !== undefined && endedAt <= e.at && !killedAfter(p.pid, endedAt);
      });
      if (!prev) continue;
      out.push({
        job: key(e.queue, e.id),
        attempt: e.attempt,
        pid: prev.pid,
        endedAt: ends.get(prev)!,
        rerunPid: e.pid,
        rerunAt: e.at,
      });
    }
  }
  return out;
}
