/** The fault suite's scenario type and the run's context (the class every scenario's inject gets). */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { errorMessage, QUEUE_DEFAULTS, WorkQueue } from '../../lib/index.js';
import type { WorkQueueOptions } from '../../lib/index.js';
import { LEASE_PAD } from '../../lib/keys.js';
import { type RedisHandle } from '../support/redis-server.js';
import type { HeldAtKill } from './deaths.js';
import type { Logs } from './logs.js';
import { Pool, type Child } from './procs.js';
import { type DeadEntry, type Fault, type JobRec } from './records.js';
import type { ScenarioSettings } from './scenario.js';
import { RECONNECT_MS, rng } from './common.js';

// ------------------------------------------------------------------------------ scenarios

/** A fault scenario: its settings (scenario.ts), and what it does to a run. */
export interface Scenario extends ScenarioSettings {
  inject(ctx: Ctx): Promise<void>;
  /** Extra checks at the end (violations are pushed to ctx). */
  finalChecks?(ctx: Ctx): Promise<void>;
}

// ------------------------------------------------------------------------------ the run

interface CleanTotals {
  rounds: number;
  errors: number;
  reclaimed: number;
  deadWorkers: number;
  reclaimedFromWorkers: number;
  deadLettered: number;
}

export class Ctx {
  readonly faults: Fault[] = [];
  /** What each SIGKILL of ctx.kill9 found leased to the killed worker. */
  readonly kills: HeldAtKill[] = [];
  /** The dead-letter set at the end (before finalChecks). */
  dead: DeadEntry[] = [];
  /** Set once drained: a worker exiting after that is not a crash. */
  drained = false;
  /** Keep the logs (the analysis found violations). */
  keepLogs = false;
  readonly jobs: JobRec[] = [];
  readonly notes: string[] = [];
  readonly violations: string[] = [];
  readonly shutdowns: number[] = [];
  readonly redisKills: number[] = [];
  readonly leaseRelease: number[] = [];
  readonly cancels: Promise<void>[] = [];
  /** Dead workers whose leases the first clean() round starting at `from` must have freed. */
  readonly leaseChecks: Array<{ queue: string; workerIds: string[]; from: number }> = [];
  readonly cleanTotals: CleanTotals = {
    rounds: 0,
    errors: 0,
    reclaimed: 0,
    deadWorkers: 0,
    reclaimedFromWorkers: 0,
    deadLettered: 0,
  };
  producing = true;
  startedAt = Date.now();
  logs: Logs | undefined;
  readonly watchers: Promise<void>[] = [];
  readonly rand: () => number;

  constructor(
    readonly s: Scenario,
    readonly redis: RedisHandle,
    readonly admin: Redis,
    readonly pool: Pool,
    readonly logDir: string,
    seed: number,
  ) {
    this.rand = rng(seed);
  }

  note(line: string): void {
    this.notes.push(line);
  }

  violation(line: string): void {
    this.violations.push(line);
  }

  /** A slot whose process is up and ready, when more than `spare` are. */
  readySlot(spare = 0): number | undefined {
    const ready = [...this.pool.slots.values()].filter(
      (c) => c.workerIds.length > 0 && c.proc.exitCode === null && c.proc.signalCode === null,
    );
    if (ready.length <= spare) return undefined;
    return ready[Math.floor(this.rand() * ready.length)]?.slot;
  }

  /**
   * After a worker process died (or shut down) at `at`: the first clean() round that starts
   * once its heartbeat has lapsed (at + heartbeatTimeoutMs; its last beat was before `at`) must
   * leave no lease, lease set or registry entry of its workers — checked by the cleaner right
   * after that round (exact, whatever this loaded machine does to timers). A watcher also
   * measures how long after `at` they were gone (reported).
   */
  watchLeases(workerIds: string[], at: number, heartbeatTimeoutMs: number): void {
    // One worker per queue, in queue order (their ids come from each queue's own registry).
    const idOf = (i: number) => (workerIds[i] === undefined ? [] : [workerIds[i]!]);
    this.s.queues.forEach((name, i) => {
      // A worker that died before its heartbeat thread's first beat has a registry entry set
      // ahead by its bridge beats (lib/worker/heartbeat.ts: up to 2 x heartbeatTimeoutMs): its
      // heartbeat lapses that much later. Judge from Redis' own view (checked from when it is read).
      const check = { queue: name, workerIds: idOf(i), from: Number.POSITIVE_INFINITY };
      this.leaseChecks.push(check);
      const q = new WorkQueue(this.admin, name, this.queueOpts());
      const ids = idOf(i);
      void Promise.all(ids.map((w) => this.admin.zscore(q.keys.workers, w)))
        .then((scores) => {
          const last = Math.max(at, ...scores.map((v) => (v === null ? 0 : Number(v))));
          check.from = last + heartbeatTimeoutMs + 5;
        })
        .catch(() => {
          check.from = at + heartbeatTimeoutMs + 5;
        });
    });
    const monitor = this.admin.duplicate();
    monitor.on('error', () => undefined);
    const queues = this.s.queues.map((name) => new WorkQueue(monitor, name, this.queueOpts()));
    this.watchers.push(
      (async () => {
        try {
          for (;;) {
            let held = 0;
            for (const [i, q] of queues.entries()) held += await heldBy(monitor, q, idOf(i));
            const elapsed = Date.now() - at;
            if (held === 0) {
              this.leaseRelease.push(elapsed);
              return;
            }
            if (elapsed > (this.s.leaseReleaseLimitMs ?? 20_000)) {
              this.violation(`leases of dead worker(s) ${workerIds.join(',')} never released`);
              return;
            }
            await sleep(25);
          }
        } catch (e) {
          this.note(`lease watcher: ${errorMessage(e)}`);
        } finally {
          monitor.disconnect();
        }
      })(),
    );
  }

  /**
   * Every lease (and hand-off) of queue `name` now: `job id → holder` (a worker id, or 'h' for a
   * hand-off no worker adopted yet). Tokens are by job number; a job with a caller id goes by
   * that id (the `ids` hash), as in the logs.
   */
  async leases(name: string): Promise<Map<string, string>> {
    const q = new WorkQueue(this.admin, name, this.queueOpts());
    const tokens = await this.admin.hgetall(q.keys.leaseHolders);
    const callerIds = await this.admin.hgetall(q.keys.key('callerIds'));
    const idOf = new Map(Object.entries(callerIds).map(([cid, n]) => [n, cid]));
    const out = new Map<string, string>();
    for (const [n, holder] of Object.entries(tokens))
      if (n !== LEASE_PAD) out.set(idOf.get(n) ?? n, holder.slice(holder.lastIndexOf(':') + 1));
    return out;
  }

  /** `queue\tid` of every job leased or handed off now, in every queue (see `resume`). */
  async held(): Promise<Set<string>> {
    const out = new Set<string>();
    for (const name of this.s.queues)
      for (const job of (await this.leases(name)).keys()) out.add(`${name}\t${job}`);
    return out;
  }

  /**
   * `CLIENT KILL TYPE <type>` (every client but ours), noting what was held right after it: the
   * jobs a worker may still start from what it had before (metrics.ts, resume).
   */
  async clientKill(type: 'normal' | 'pubsub'): Promise<void> {
    const at = Date.now();
    await this.admin.call('CLIENT', 'KILL', 'TYPE', type);
    // Workers reconnect no sooner than 50 ms later (ioredis): nothing is leased meanwhile.
    const held = await this.held().catch(() => undefined);
    const end = at + RECONNECT_MS;
    this.faults.push({ kind: `client-kill-${type}`, at, back: at, end, held });
  }

  /**
   * How far ahead of the kill its workers' registry entries were (ms, 0 if not): a worker killed
   * before its heartbeat thread's first beat was kept alive ahead by its bridge beats (up to
   * 2 × heartbeatTimeoutMs, lib/worker/heartbeat.ts: the start-up grace), so its jobs come
   * back that much later by design.
   */
  private async registryAhead(k: { at: number; workerIds: string[] }): Promise<number> {
    const scores = await Promise.all(
      this.s.queues.map((name, i) => {
        const w = k.workerIds[i];
        if (w === undefined) return null;
        return this.admin.zscore(new WorkQueue(this.admin, name, this.queueOpts()).keys.workers, w);
      }),
    ).catch(() => []);
    const last = Math.max(k.at, ...scores.map((v) => (v === null ? 0 : Number(v))));
    return last - k.at;
  }

  heartbeatTimeoutMs(): number {
    return this.s.queueOptions.heartbeatTimeoutMs ?? QUEUE_DEFAULTS.heartbeatTimeoutMs;
  }

  /**
   * SIGKILL the worker in `slot`, note what Redis says it held (its lease tokens: nothing changes
   * them before its heartbeat lapses), watch its leases go, restart it.
   */
  async kill9(slot: number): Promise<void> {
    const k = await this.pool.kill9(slot);
    this.faults.push({ kind: 'kill9', at: k.at, end: k.at, pid: k.pid });
    const leased: string[] = [];
    for (const [i, name] of this.s.queues.entries()) {
      const w = k.workerIds[i];
      if (w === undefined) continue;
      for (const [job, holder] of await this.leases(name))
        if (holder === w) leased.push(`${name}\t${job}`);
    }
    this.kills.push({ pid: k.pid, at: k.at, leased, ahead: await this.registryAhead(k) });
    this.watchLeases(k.workerIds, k.at, this.heartbeatTimeoutMs());
    this.startSlot(slot);
  }

  /**
   * Start (or restart) the worker in `slot`. With `restartCrashed`, a worker that exits by
   * itself (a poison pill's process.exit(1)) before the queue drained is a `crash` fault: its
   * leases are watched and it is started again.
   */
  startSlot(slot: number): Child {
    const c = this.pool.start(slot);
    if (!this.s.restartCrashed) return c;
    void c.exited.then((x) => {
      if (this.drained || x.signal !== null || x.code === 0) return;
      this.faults.push({ kind: 'crash', at: x.at, end: x.at, pid: c.pid });
      this.watchLeases(c.workerIds, x.at, this.heartbeatTimeoutMs());
      this.startSlot(slot);
    });
    return c;
  }

  queueOpts(): WorkQueueOptions {
    return { ...this.s.queueOptions, ...resultsOption(this.s), prefix: 'fx', logger: false };
  }
}

/** Leases, lease-set members and registry entries of these workers in queue `q`. */
export async function heldBy(c: Redis, q: WorkQueue, workerIds: string[]): Promise<number> {
  const tokens = await c.hvals(q.keys.leaseHolders);
  let held = 0;
  for (const w of workerIds) {
    held += tokens.filter((t) => t.endsWith(`:${w}`)).length;
    held += await c.scard(q.keys.workerLeases(w));
    if ((await c.zscore(q.keys.workers, w)) !== null) held += 1;
  }
  return held;
}

export function resultsOption(s: Scenario): Pick<WorkQueueOptions, 'storeResults'> {
  return s.storeResults ? { storeResults: { ttlMs: 600_000 } } : {};
}
