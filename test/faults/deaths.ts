/**
 * Measurements around worker processes that died while running jobs (metrics.ts has the others):
 * recovery of the jobs a killed worker held, dead-lettered bystanders. Pure functions, like
 * analyze.ts.
 */
import type { Exec, Logs } from './logs.js';
import { key, type DeadEntry, type Fault } from './records.js';

/** A worker process that died while running jobs: killed (SIGKILL) or crashed by a handler. */
export const DEATHS: ReadonlySet<Fault['kind']> = new Set(['kill9', 'crash']);

/** What a SIGKILLed worker held when it died, as read from Redis right after it was gone. */
export interface HeldAtKill {
  pid: number;
  at: number;
  /** `queue\tid` of every job leased to one of its workers (the lease tokens in Redis). */
  leased: string[];
  /** How far ahead of `at` its registry entry was (the start-up grace): recovery counts from then. */
  ahead: number;
}

/** Per process: its executions, and when it logged each job's completion. */
class ByProcess {
  private readonly execs = new Map<number, Exec[]>();
  private readonly done = new Map<number, Map<string, number>>();

  constructor(logs: Logs) {
    for (const e of logs.execs) {
      const list = this.execs.get(e.pid) ?? [];
      list.push(e);
      this.execs.set(e.pid, list);
    }
    for (const d of logs.dones) {
      const m = this.done.get(d.pid) ?? new Map<string, number>();
      if (!m.has(key(d.queue, d.id))) m.set(key(d.queue, d.id), d.at);
      this.done.set(d.pid, m);
    }
  }

  /** Jobs whose handler ran in `pid` at `at` (started, no completion logged by then). */
  inFlight(pid: number, at: number): Set<string> {
    const out = new Set<string>();
    const done = this.done.get(pid);
    for (const e of this.execs.get(pid) ?? []) {
      if (e.at > at) break;
      const k = key(e.queue, e.id);
      const d = done?.get(k);
      if (d === undefined || d > at) out.add(k);
    }
    return out;
  }
}

export interface Recovery {
  /** SIGKILL → the first run elsewhere, per job the killed worker held. */
  samples: number[];
  /** Jobs held (leased or running) that never ran again (completed in Redis, dead, cancelled). */
  notRerun: number;
  /** Re-run jobs that ran in the worker but were not leased to it in Redis: hand-offs it had
   * popped but not adopted yet (their lease names no worker). */
  handOffs: number;
  /** Re-run jobs of a worker killed inside its start-up grace (measured from the grace's end). */
  graced: number;
}

/**
 * For each SIGKILL: every job its worker held — leased to it in Redis at the kill, or running in
 * it (hand-offs run before they are adopted, and their lease names no worker) — and how long
 * after the kill it started again in another process.
 */
export function heldRecovery(logs: Logs, kills: readonly HeldAtKill[]): Recovery {
  const procs = new ByProcess(logs);
  const execsOf = new Map<string, Exec[]>();
  for (const e of logs.execs) {
    const list = execsOf.get(key(e.queue, e.id)) ?? [];
    list.push(e);
    execsOf.set(key(e.queue, e.id), list);
  }
  const r: Recovery = { samples: [], notRerun: 0, handOffs: 0, graced: 0 };
  for (const k of kills) {
    const running = procs.inFlight(k.pid, k.at);
    const leased = new Set(k.leased);
    for (const job of new Set([...leased, ...running])) {
      const next = execsOf.get(job)?.find((e) => e.at >= k.at && e.pid !== k.pid);
      if (!next) {
        r.notRerun += 1;
        continue;
      }
      r.samples.push(Math.max(0, next.at - k.at - k.ahead));
      if (k.ahead > 0) r.graced += 1;
      if (!leased.has(job)) r.handOffs += 1;
    }
  }
  return r;
}

/**
 * Dead-lettered bystanders: jobs dead-lettered for expired leases that never died alone — every
 * death (its worker killed or crashed while it ran there) happened with other jobs running in
 * the same process, or it was only leased, not running, when its workers died — so nothing says
 * they killed their worker. `exclude`: jobs known to crash their worker (poison pills).
 */
export function deadBystanders(
  logs: Logs,
  faults: readonly Fault[],
  dead: readonly DeadEntry[],
  exclude: ReadonlySet<string> = new Set(),
): string[] {
  const procs = new ByProcess(logs);
  const deaths = faults.filter((f) => DEATHS.has(f.kind) && f.pid !== undefined);
  const execsOf = new Map<string, Exec[]>();
  for (const e of logs.execs) {
    const list = execsOf.get(key(e.queue, e.id)) ?? [];
    list.push(e);
    execsOf.set(key(e.queue, e.id), list);
  }
  const out: string[] = [];
  for (const d of dead) {
    const k = key(d.queue, d.id);
    if (!/^lease expired/.test(d.reason) || exclude.has(k)) continue;
    const died: Fault[] = [];
    for (const e of execsOf.get(k) ?? []) {
      const f = deaths.find((x) => x.pid === e.pid && x.at >= e.at);
      if (f && procs.inFlight(e.pid, f.at).has(k) && !died.includes(f)) died.push(f);
    }
    // No death while it ran (it was leased, not started, each time its worker died): it never
    // ran alone either.
    const alone = died.some((f) => {
      const running = procs.inFlight(f.pid!, f.at);
      running.delete(k);
      return running.size === 0;
    });
    if (!alone) out.push(k);
  }
  return out;
}
