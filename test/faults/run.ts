/**
 * `npm run test:faults [-- --quick] [-- --scenario=kill9,slow] [-- --seed=N]`
 *
 * The fault-injection suite. Each scenario runs on a fresh private redis-server: producers add
 * jobs (mixed priorities, short delays, caller ids) while 4 worker processes (concurrency 10)
 * run them and log every execution and every `completed` event to files outside Redis; the
 * orchestrator injects faults and runs `clean()` every 250 ms. Then it checks, from the logs and
 * from Redis:
 * - every acknowledged job (its `add` resolved) completed exactly once, or was cancelled, or is
 *   dead-lettered with a reason the scenario explains: zero lost;
 * - every duplicate execution is explained by a fault (in flight in a killed process, released
 *   at shutdown, lease expired during a pause, ...);
 * - no lease of a dead worker survives its heartbeat timeout + one clean interval;
 * - `repair()` finds nothing, and Redis holds no key of a finished job (SCAN): only the
 *   counters `id`, `tok`, `wseq`, the heartbeat record `hb` (+ the registry `w` while workers
 *   live, the dead-letter set with its jobs until purged, caller ids within their dedupe window
 *   and producers' add records, which expire).
 * Issue 12's scenarios (`defaults`, `poison`, `client-kill`) live in scenarios/issue12.ts; the
 * table also reports, for every scenario, recovery p50/p90/max, dead-lettered bystanders (where
 * measured), the slowest add→start, the drain after the last add and adds completed twice
 * (measure.ts, metrics.ts) — violations only behind the scenarios' `assert*` flags.
 * Prints a table and exits non-zero when an invariant fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { errorMessage, QUEUE_DEFAULTS, WorkQueue } from '../../lib/index.js';
import type { WorkerOptions, WorkQueueOptions } from '../../lib/index.js';
import { keysMatching } from '../support/keys.js';
import { allPayloads, payloadCount } from '../support/payloads.js';
import { startRedis, type RedisHandle, type StartRedisOptions } from '../support/redis-server.js';
import {
  analyze,
  quantile,
  readLogs,
  type Analysis,
  type DeadEntry,
  type Fault,
  type JobRec,
  type Logs,
} from './analyze.js';
import type { Behavior, FaultJob } from './handler.js';
import { measure, type Measured } from './measure.js';
import type { HeldAtKill } from './metrics.js';
import { issue12Scenarios } from './scenarios/issue12.js';
import type { NestWorkerConfig } from './nest-worker.js';
import { Pool, type Child } from './procs.js';
import type { WorkerProcConfig } from './worker-proc.js';
import {
  CLEAN_INTERVAL_MS,
  CONCURRENCY,
  fmt,
  KEEP_LOGS,
  leaseExpiryExplained,
  ONLY,
  QUICK,
  quickWork,
  RECONNECT_MS,
  rng,
  say,
  scale,
  SEED,
  WORKERS,
} from './common.js';

const GLOBAL_TIMEOUT_MS = QUICK ? 4 * 60_000 : 9 * 60_000;

// ------------------------------------------------------------------------------ scenarios

export interface Scenario {
  id: string;
  title: string;
  /** Report, do not assert (appendfsync everysec). */
  reportOnly?: boolean;
  jobs: number;
  /** Jobs per second the producers add. */
  rate: number;
  queues: string[];
  worker: 'core' | 'nest';
  redis: StartRedisOptions;
  /** The core's defaults for what is left out (the `defaults` scenario leaves out everything). */
  queueOptions: WorkQueueOptions;
  workerOptions: WorkerOptions;
  /** Nest workers: 300 ms unless set; 'default': the module's default. */
  shutdownTimeoutMs?: number | 'default';
  /** How long a dead worker's leases may stay before it is a violation (default 20 s). */
  leaseReleaseLimitMs?: number;
  /** A worker that exits by itself is a `crash` fault, and restarted (ctx.startSlot). */
  restartCrashed?: boolean;
  /**
   * Keep results (10 min): a stored result proves that a job's complete ran in Redis when the
   * process died (or lost its connection) before its `completed` event reached the log.
   */
  storeResults?: boolean;
  cidShare: number;
  bulkShare: number;
  cancelShare: number;
  behavior(r: () => number, i: number, n: number): { b: Behavior; ms: number };
  inject(ctx: Ctx): Promise<void>;
  deadOk(reason: string, job: JobRec | undefined, faultsInLife: Fault[]): string | null;
  recoveryOf?(logs: Logs, jobs: JobRec[]): number[];
  /** What the recovery column measures. */
  recovery: string;
  drainTimeoutMs: number;
  /** Extra checks at the end (violations are pushed to ctx). */
  finalChecks?(ctx: Ctx): Promise<void>;
  /**
   * Who runs clean(): the orchestrator every 250 ms (default), or the Nest module's own cleaner
   * at its default interval (Nest workers only; the orchestrator then never cleans).
   */
  cleaner?: 'orchestrator' | 'module';
  /** Recovery = SIGKILL (ctx.kill9) → re-run of every job the worker held (metrics.ts). */
  heldRecovery?: boolean;
  /** Report dead-lettered bystanders (metrics.ts); jobs of these behaviours left out. */
  bystanders?: { exclude: Behavior[] };
  /** Violation: recovery p50 > 3 s or max > 5 s (with heldRecovery). */
  assertRecovery?: boolean;
  /** Violation: a dead-lettered bystander. */
  assertBystanders?: boolean;
  /** Violation: the slowest add→start over 5 s. */
  assertReconcile?: boolean;
  /** Violation: a producer add completed more than once. */
  assertNoDupAdds?: boolean;
}

function scenarios(): Scenario[] {
  const base = {
    queues: ['fq'],
    worker: 'core' as const,
    cidShare: 0.5,
    bulkShare: 0.2,
    cancelShare: 0.005,
    drainTimeoutMs: 60_000,
    storeResults: true,
  };
  return [
    {
      ...base,
      id: 'kill9',
      title: 'kill -9 workers',
      jobs: scale(20_000, 3_000),
      rate: 1_000,
      queues: ['fa', 'fb'],
      redis: {},
      // A long lease: recovery must come from the heartbeat, not from lease expiry.
      queueOptions: {
        heartbeatTimeoutMs: 1_000,
        leaseMs: 10_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      behavior: (r) => (r() < 0.05 ? { b: 'work', ms: 50 + Math.floor(r() * 250) } : quickWork(r)),
      async inject(ctx) {
        while (ctx.producing) {
          await sleep(QUICK ? 500 + ctx.rand() * 1_000 : 1_000 + ctx.rand() * 2_000);
          if (!ctx.producing) break;
          const slot = ctx.readySlot();
          if (slot === undefined) continue;
          const k = await ctx.pool.kill9(slot);
          ctx.faults.push({ kind: 'kill9', at: k.at, end: k.at, pid: k.pid });
          ctx.watchLeases(k.workerIds, k.at, ctx.heartbeatTimeoutMs());
          ctx.pool.start(slot);
        }
      },
      deadOk: leaseExpiryExplained(['kill9']),
      recovery: 'SIGKILL → re-run of each job it held',
      bystanders: { exclude: [] },
      assertBystanders: true,
    },
    {
      ...base,
      id: 'redis-always',
      title: 'Redis kill -9 + restart, AOF always',
      jobs: scale(8_000, 2_000),
      rate: 600,
      redis: { appendonly: true, appendfsync: 'always' },
      cidShare: 0.8,
      cancelShare: 0,
      queueOptions: {
        heartbeatTimeoutMs: 3_000,
        leaseMs: 5_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      behavior: quickWork,
      inject: (ctx) => restartRedisLoop(ctx),
      deadOk: leaseExpiryExplained(['redis-kill']),
      recovery: 'Redis SIGKILL → next completion',
      assertNoDupAdds: true,
    },
    {
      ...base,
      id: 'redis-everysec',
      title: 'Redis kill -9 + restart, AOF everysec (report)',
      reportOnly: true,
      jobs: scale(5_000, 1_500),
      rate: 600,
      redis: { appendonly: true, appendfsync: 'everysec' },
      cidShare: 0.8,
      cancelShare: 0,
      queueOptions: {
        heartbeatTimeoutMs: 3_000,
        leaseMs: 5_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      behavior: quickWork,
      inject: (ctx) => restartRedisLoop(ctx),
      deadOk: leaseExpiryExplained(['redis-kill']),
      recovery: 'Redis SIGKILL → next completion',
    },
    {
      ...base,
      id: 'connections',
      title: 'CLIENT KILL normal/pubsub/id + CLIENT PAUSE 1.5 s',
      jobs: scale(8_000, 2_000),
      rate: 600,
      redis: {},
      cidShare: 0.7,
      queueOptions: {
        heartbeatTimeoutMs: 1_000,
        leaseMs: 1_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      // Some jobs run across a pause: their leases expire meanwhile (renewals are held too).
      behavior: (r) =>
        r() < 0.05 ? { b: 'work', ms: 100 + Math.floor(r() * 1_400) } : quickWork(r),
      async inject(ctx) {
        const duration = (this.jobs / this.rate) * 1_000;
        const pauses = [ctx.startedAt + duration / 3, ctx.startedAt + (2 * duration) / 3];
        while (ctx.producing) {
          await sleep(300 + ctx.rand() * 600);
          if (!ctx.producing) break;
          if (pauses.length > 0 && Date.now() >= pauses[0]!) {
            pauses.shift();
            const at = Date.now();
            ctx.faults.push({
              kind: 'pause',
              at,
              back: at + 1_500,
              end: at + 1_500 + RECONNECT_MS,
            });
            await ctx.admin.client('PAUSE', 1_500, 'ALL');
            await sleep(1_600);
            continue;
          }
          const roll = ctx.rand();
          const at = Date.now();
          if (roll < 0.4) {
            await ctx.admin.call('CLIENT', 'KILL', 'TYPE', 'normal');
            ctx.faults.push({ kind: 'client-kill-normal', at, back: at, end: at + RECONNECT_MS });
          } else if (roll < 0.7) {
            await ctx.admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
            ctx.faults.push({ kind: 'client-kill-pubsub', at, back: at, end: at + RECONNECT_MS });
          } else {
            const list = String(await ctx.admin.client('LIST'));
            const me = String(await ctx.admin.client('ID'));
            const ids = [...list.matchAll(/^id=(\d+) /gm)]
              .map((m) => m[1]!)
              .filter((i) => i !== me);
            const victim = ids[Math.floor(ctx.rand() * ids.length)];
            if (victim) {
              await ctx.admin.call('CLIENT', 'KILL', 'ID', victim).catch(() => 0);
              ctx.faults.push({ kind: 'client-kill-id', at, back: at, end: at + RECONNECT_MS });
            }
          }
        }
      },
      deadOk: leaseExpiryExplained(['pause', 'client-kill-normal', 'client-kill-id']),
      recovery: 'kill/pause → next completion',
      assertNoDupAdds: true,
    },
    {
      ...base,
      id: 'slow',
      title: 'slow, event-loop-blocking and hung handlers',
      storeResults: false,
      jobs: scale(4_000, 1_000),
      rate: 400,
      redis: {},
      queueOptions: {
        heartbeatTimeoutMs: 1_000,
        leaseMs: 3_000,
        maxAttempts: 3,
        backoff: { type: 'fixed', delayMs: 200 },
      },
      workerOptions: { concurrency: CONCURRENCY, jobTimeoutMs: 5_000, idleTimeoutMs: 2_000 },
      behavior(r, i, n) {
        // Hung jobs early, so that their three timed-out attempts end within the run.
        if (i < n * 0.2 && i % Math.floor(n / 25) === 3) return { b: 'hang', ms: 0 };
        if (i < n * 0.2 && i % Math.floor(n / 25) === 7) return { b: 'hang1', ms: 0 };
        if (i % Math.floor(n / 40) === 5) return { b: 'slow', ms: 4_000 };
        if (i % Math.floor(n / 30) === 11) return { b: 'busy', ms: 1_200 };
        return quickWork(r);
      },
      inject: async (ctx) => {
        while (ctx.producing) await sleep(100);
      },
      deadOk: (reason, job) =>
        job?.b === 'hang' && /timed out after 5000 ms/.test(reason)
          ? 'hung handler timed out on every attempt (by design)'
          : null,
      recoveryOf(logs) {
        // A hung attempt's timeout → the job's next run (backoff 200 ms).
        const out: number[] = [];
        const byJob = new Map<string, number[]>();
        for (const e of logs.execs) {
          const list = byJob.get(`${e.queue}\t${e.id}\t${e.attempt}`) ?? [];
          list.push(e.at);
          byJob.set(`${e.queue}\t${e.id}\t${e.attempt}`, list);
        }
        for (const e of logs.execs) {
          if (e.attempt < 2) continue;
          const prev = byJob.get(`${e.queue}\t${e.id}\t${e.attempt - 1}`);
          if (prev) out.push(e.at - (prev[0]! + 5_000));
        }
        return out;
      },
      async finalChecks(ctx) {
        const logs = ctx.logs!;
        // Jobs the producer tried to cancel are left out (they may never have run to the end).
        const kept = ctx.jobs.filter((j) => j.ackId !== undefined && j.cancel === undefined);
        const kinds = new Map(kept.map((j) => [`${j.queue}\t${j.ackId}`, j.b]));
        const runs = (b: Behavior) =>
          logs.execs.filter((e) => kinds.get(`${e.queue}\t${e.id}`) === b);
        const done = (b: Behavior) =>
          logs.dones.filter((d) => kinds.get(`${d.queue}\t${d.id}`) === b);
        const blocked = logs.events.filter((e) => e.kind === 'B' && e.fields[0] === 'blocked');
        const count = (b: Behavior) => kept.filter((j) => j.b === b).length;
        ctx.note(
          `slow ${count('slow')} (runs ${runs('slow').length}, completed ${done('slow').length}); ` +
            `busy ${count('busy')} (${blocked.length} blocked the loop ` +
            `${Math.min(...blocked.map((e) => Number(e.fields[1])))}-${Math.max(...blocked.map((e) => Number(e.fields[1])))} ms, completed ${done('busy').length}); ` +
            `hang ${count('hang')} (runs ${runs('hang').length}); hang1 ${count('hang1')} (completed ${done('hang1').length})`,
        );
        if (runs('slow').length !== count('slow'))
          ctx.violation('a slow job (longer than its lease) ran more than once');
        if (blocked.length === 0) ctx.violation('no handler blocked the event loop');
        if (runs('hang').length !== 3 * count('hang'))
          ctx.violation(`hung jobs should run exactly maxAttempts (3) times each`);
        if (done('hang1').length !== count('hang1'))
          ctx.violation('a job hung on attempt 1 did not complete on attempt 2');
        if (ctx.cleanTotals.deadWorkers > 0)
          ctx.violation(
            `${ctx.cleanTotals.deadWorkers} live worker(s) reclaimed as dead (busy event loop)`,
          );
        if (ctx.cleanTotals.reclaimed > 0)
          ctx.violation(`${ctx.cleanTotals.reclaimed} lease(s) expired although renewed`);
      },
      recovery: 'hung attempt timeout → re-run',
    },
    {
      ...base,
      id: 'shutdown',
      title: 'SIGTERM to Nest app workers (graceful shutdown)',
      storeResults: false,
      jobs: scale(6_000, 1_500),
      rate: 300,
      worker: 'nest',
      redis: {},
      queueOptions: {
        heartbeatTimeoutMs: 1_000,
        leaseMs: 5_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY },
      shutdownTimeoutMs: 300,
      behavior: (r) => (r() < 0.1 ? { b: 'work', ms: 200 + Math.floor(r() * 600) } : quickWork(r)),
      async inject(ctx) {
        while (ctx.producing) {
          await sleep(QUICK ? 700 + ctx.rand() * 1_000 : 1_500 + ctx.rand() * 2_000);
          if (!ctx.producing) break;
          const slot = ctx.readySlot();
          if (slot === undefined) continue;
          const r = await ctx.pool.sigterm(slot);
          ctx.faults.push({ kind: 'sigterm', at: r.at, end: r.exitedAt, pid: r.pid });
          ctx.shutdowns.push(r.exitedAt - r.at);
          if (r.signal !== 'SIGTERM' && r.code !== 0)
            ctx.violation(`Nest app ${r.pid} exited with ${r.code ?? r.signal} on SIGTERM`);
          ctx.watchLeases(r.workerIds, r.exitedAt, 0);
          ctx.pool.start(slot);
        }
      },
      deadOk: () => null,
      recovery:
        'SIGTERM → re-run of each released job (front of its priority: lower priorities wait for the backlog)',
      async finalChecks(ctx) {
        if (ctx.cleanTotals.deadWorkers > 0)
          ctx.violation(`${ctx.cleanTotals.deadWorkers} worker(s) reclaimed as dead`);
        if (ctx.cleanTotals.reclaimed > 0)
          ctx.violation(`${ctx.cleanTotals.reclaimed} lease(s) expired`);
        ctx.note(
          `${ctx.shutdowns.length} graceful shutdowns, SIGTERM → exit p50 ${fmt(quantile(ctx.shutdowns, 0.5))} max ${fmt(Math.max(...ctx.shutdowns))} (shutdownTimeoutMs 300)`,
        );
      },
    },
    ...issue12Scenarios(base),
  ];
}

async function restartRedisLoop(ctx: Ctx): Promise<void> {
  let n = 0;
  const max = QUICK ? 1 : 4;
  while (ctx.producing && n < max) {
    await sleep(QUICK ? 800 : 2_000 + ctx.rand() * 1_500);
    if (!ctx.producing) break;
    n += 1;
    const at = Date.now();
    await ctx.redis.kill();
    ctx.redisKills.push(at);
    await sleep(ctx.rand() * 800);
    await ctx.redis.restart();
    const back = Date.now();
    ctx.faults.push({ kind: 'redis-kill', at, back, end: back + RECONNECT_MS });
    ctx.note(`redis kill #${n}: down ${Date.now() - at} ms`);
  }
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

  /** A slot whose process is up and ready. */
  readySlot(): number | undefined {
    const ready = [...this.pool.slots.values()].filter(
      (c) => c.workerIds.length > 0 && c.proc.exitCode === null && c.proc.signalCode === null,
    );
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
      const q = new WorkQueue(this.admin, name, this.queueOpts());
      // Tokens are by job number; a job with a caller id goes by that id (the `ids` hash).
      const tokens = await this.admin.hgetall(q.keys.tokens);
      const callerIds = await this.admin.hgetall(q.keys.base + 'ids');
      const idOf = new Map(Object.entries(callerIds).map(([cid, n]) => [n, cid]));
      for (const [n, holder] of Object.entries(tokens))
        if (holder.endsWith(`:${w}`)) leased.push(`${name}\t${idOf.get(n) ?? n}`);
    }
    this.kills.push({ pid: k.pid, at: k.at, leased });
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
async function heldBy(c: Redis, q: WorkQueue, workerIds: string[]): Promise<number> {
  const tokens = await c.hvals(q.keys.tokens);
  let held = 0;
  for (const w of workerIds) {
    held += tokens.filter((t) => t.endsWith(`:${w}`)).length;
    held += await c.scard(q.keys.workerLeases(w));
    if ((await c.zscore(q.keys.workers, w)) !== null) held += 1;
  }
  return held;
}

function resultsOption(s: Scenario): Pick<WorkQueueOptions, 'storeResults'> {
  return s.storeResults ? { storeResults: { ttlMs: 600_000 } } : {};
}

interface Row {
  s: Scenario;
  a: Analysis;
  m: Measured;
  ctx: Ctx;
  seconds: number;
}

async function runScenario(s: Scenario, seed: number): Promise<Row> {
  const started = Date.now();
  const logDir = mkdtempSync(path.join(os.tmpdir(), `wq-faults-${s.id}-`));
  const redis = await startRedis(s.redis);
  const admin = new Redis(redis.url, { maxRetriesPerRequest: null });
  admin.on('error', () => undefined);
  const prefix = 'fx';
  const results = resultsOption(s);
  const pool =
    s.worker === 'core'
      ? new Pool('test/faults/worker-proc.ts', (): WorkerProcConfig => ({
          redisUrl: redis.url,
          prefix,
          queues: s.queues,
          queueOptions: { ...s.queueOptions, ...results },
          workerOptions: s.workerOptions,
          logDir,
        }))
      : new Pool('test/faults/nest-worker.ts', (): NestWorkerConfig => ({
          redisUrl: redis.url,
          prefix,
          queue: s.queues[0]!,
          queueOptions: { ...s.queueOptions, ...results },
          workerOptions: s.workerOptions,
          shutdownTimeoutMs:
            s.shutdownTimeoutMs === 'default' ? undefined : (s.shutdownTimeoutMs ?? 300),
          cleanerIntervalMs: s.cleaner === 'module' ? 'default' : 0,
          logDir,
        }));
  const ctx = new Ctx(s, redis, admin, pool, logDir, seed);
  say(`${s.id}: ${s.title} — ${s.jobs} jobs at ${s.rate}/s, seed ${seed}, logs ${logDir}`);
  try {
    await Promise.all(Array.from({ length: WORKERS }, (_, i) => ctx.startSlot(i).ready));
    ctx.startedAt = Date.now();
    const cleaner = s.cleaner === 'module' ? { stop: async () => undefined } : startCleaner(ctx);
    const producer = produce(ctx);
    const injector = s.inject(ctx);
    await producer;
    ctx.producing = false;
    await injector;
    const acked = ctx.jobs.filter((j) => j.ackId !== undefined).length;
    say(
      `${s.id}: produced (${acked} acknowledged) in ${fmt(Date.now() - ctx.startedAt)}; draining`,
    );
    await Promise.all([...pool.slots.values()].map((c) => c.ready.catch(() => undefined)));
    const drained = await drain(ctx);
    ctx.drained = true;
    if (!drained) ctx.violation(`not drained within ${s.drainTimeoutMs} ms`);
    await sleep(500); // the last `completed` events reach the logs
    await Promise.all(ctx.watchers);
    await endChecks(ctx, 'live');
    if (s.worker === 'core') await pool.closeAll();
    else await pool.terminateAll();
    await cleaner.stop();
    await endChecks(ctx, 'closed');
    ctx.logs = readLogs(logDir);
    // A crash is noticed when the orchestrator sees the exit (late on a loaded machine): it
    // happened when the pill logged its process.exit.
    for (const f of ctx.faults.filter((x) => x.kind === 'crash')) {
      const pill = ctx.logs.events.find((e) => e.kind === 'P' && e.pid === f.pid);
      if (pill && pill.at < f.at) f.at = f.end = pill.at;
    }
    const dead = await deadEntries(ctx);
    const stored = s.storeResults ? await resultKeys(ctx) : undefined;
    const a = analyze({
      results: stored,
      jobs: ctx.jobs,
      logs: ctx.logs,
      faults: ctx.faults,
      dead,
      deadOk: s.deadOk,
      recoveryOf: s.recoveryOf,
      lenientCalls: ctx.faults.some((f) => !['kill9', 'crash', 'sigterm'].includes(f.kind)),
    });
    if (s.id.startsWith('redis') || s.id === 'connections' || s.id === 'client-kill') {
      // Recovery: from each global fault to the next completion.
      // Replies already on their way when the fault hit do not count: from Redis being back
      // (restart done, pause over), or 20 ms after a connection kill.
      for (const f of ctx.faults) {
        const from = f.kind === 'redis-kill' || f.kind === 'pause' ? f.back! : f.at + 20;
        const next = ctx.logs.dones.find((d) => d.at > from);
        if (next) a.recovery.push(next.at - f.at);
      }
    }
    ctx.dead = dead;
    ctx.keepLogs ||= a.violations.length > 0;
    const m = measure(ctx, a);
    if (s.finalChecks) await s.finalChecks(ctx);
    await purgeAndCheck(ctx);
    if (s.reportOnly) reportEverysec(ctx, a);
    return { s, a, m, ctx, seconds: (Date.now() - started) / 1_000 };
  } finally {
    await pool.closeAll(2_000).catch(() => undefined);
    admin.disconnect();
    await redis.dispose();
    const failed = ctx.violations.length > 0 || ctx.keepLogs;
    if (!KEEP_LOGS && !failed) rmSync(logDir, { recursive: true, force: true });
  }
}

function startCleaner(ctx: Ctx): { stop(): Promise<void> } {
  const client = new Redis(ctx.redis.url);
  client.on('error', () => undefined);
  const queues = ctx.s.queues.map((name) => new WorkQueue(client, name, ctx.queueOpts()));
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const q of queues) {
        const roundStart = Date.now();
        try {
          const r = await q.clean();
          for (const check of ctx.leaseChecks.filter(
            (c) => c.queue === q.name && c.from <= roundStart,
          )) {
            ctx.leaseChecks.splice(ctx.leaseChecks.indexOf(check), 1);
            const held = await heldBy(client, q, check.workerIds);
            if (held > 0)
              ctx.violation(
                `${q.name}: ${held} lease(s)/entries of dead worker(s) ${check.workerIds.join(',')} left after the first clean() past their heartbeat timeout`,
              );
          }
          const t = ctx.cleanTotals;
          t.rounds += 1;
          t.reclaimed += r.reclaimed;
          t.deadWorkers += r.deadWorkers;
          t.reclaimedFromWorkers += r.reclaimedFromWorkers;
          t.deadLettered += r.deadLettered;
        } catch {
          ctx.cleanTotals.errors += 1;
        }
      }
      await sleep(CLEAN_INTERVAL_MS);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      client.disconnect();
    },
  };
}

/** Add every planned job (paced), retrying failed adds of caller-id jobs with the same id. */
async function produce(ctx: Ctx): Promise<void> {
  const s = ctx.s;
  const r = rng(SEED ^ 0x5eed);
  const client = new Redis(ctx.redis.url);
  client.on('error', () => undefined);
  const queues = new Map(
    s.queues.map((name) => [name, new WorkQueue<FaultJob>(client, name, ctx.queueOpts())]),
  );
  const plan: JobRec[] = [];
  for (let i = 0; i < s.jobs; i++) {
    const { b, ms } = s.behavior(r, i, s.jobs);
    const delayed = r() < 0.1;
    plan.push({
      queue: s.queues[i % s.queues.length]!,
      k: `${s.id}-${i}`,
      cid: r() < s.cidShare,
      b,
      ms,
      priority: Math.floor(r() * 10),
      delayMs: delayed ? 1 + Math.floor(r() * 1_000) : undefined,
      bulk: false,
      tries: [],
    });
  }
  // Bulk groups: 10 caller-id jobs of one queue at a time.
  const pending = [...plan];
  let inflight = 0;
  const calls: Promise<void>[] = [];
  const t0 = Date.now();
  let sent = 0;
  while (pending.length > 0) {
    const due = t0 + (sent * 1_000) / s.rate;
    const wait = due - Date.now();
    if (wait > 5) await sleep(wait);
    while (inflight >= 300) await sleep(5);
    let group: JobRec[];
    if (r() < s.bulkShare / 10 && pending.length >= 10) {
      group = pending.splice(0, 10);
      for (const j of group) Object.assign(j, { queue: group[0]!.queue, cid: true, bulk: true });
    } else {
      group = [pending.shift()!];
    }
    ctx.jobs.push(...group);
    sent += group.length;
    inflight += 1;
    const q = queues.get(group[0]!.queue)!;
    calls.push(
      addWithRetry(ctx, q, group, r).finally(() => {
        inflight -= 1;
      }),
    );
  }
  await Promise.all(calls);
  await Promise.all(ctx.cancels);
  await client.quit().catch(() => client.disconnect());
}

async function addWithRetry(
  ctx: Ctx,
  q: WorkQueue<FaultJob>,
  group: JobRec[],
  r: () => number,
): Promise<void> {
  const retryUntil = Date.now() + 30_000;
  for (let t = 1; ; t++) {
    const sent = Date.now();
    const entries = group.map((j) => ({
      data: { k: j.k, t, b: j.b, ms: j.ms } satisfies FaultJob,
      opts: { id: j.cid ? j.k : undefined, priority: j.priority, delayMs: j.delayMs },
    }));
    try {
      const res =
        group.length === 1
          ? [await q.add(entries[0]!.data, entries[0]!.opts)]
          : await q.addBulk(entries);
      const settled = Date.now();
      group.forEach((j, i) => {
        j.tries.push({ t, sent, settled, ok: true, added: res[i]!.added, id: res[i]!.id });
        j.ackId = res[i]!.id;
        j.ackAt = settled;
        if (r() < ctx.s.cancelShare) ctx.cancels.push(cancelLater(ctx, q, j, r() * 30));
      });
      return;
    } catch (e) {
      const settled = Date.now();
      for (const j of group) j.tries.push({ t, sent, settled, ok: false, err: errorMessage(e) });
      // Without a caller id a retry could add the job twice: such an add is refused, not retried.
      if (!group.every((j) => j.cid) || Date.now() > retryUntil) return;
      await sleep(Math.min(1_000, 50 * 2 ** t));
    }
  }
}

async function cancelLater(
  ctx: Ctx,
  q: WorkQueue<FaultJob>,
  j: JobRec,
  delayMs: number,
): Promise<void> {
  await sleep(delayMs);
  const sent = Date.now();
  try {
    const result = await q.cancel(j.ackId!);
    j.cancel = { sent, settled: Date.now(), result };
  } catch {
    j.cancel = { sent, settled: Date.now(), result: 'error' };
  }
}

/** Wait until no job of any queue is pending, delayed or leased (dead ones stay). */
async function drain(ctx: Ctx): Promise<boolean> {
  const queues = ctx.s.queues.map((name) => new WorkQueue(ctx.admin, name, ctx.queueOpts()));
  const deadline = Date.now() + ctx.s.drainTimeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    let busy = 0;
    const parts: string[] = [];
    for (const q of queues) {
      const c = await q.counts();
      // Pending lists may hold entries of cancelled jobs (tombstones) until a lease skips them:
      // count live payloads instead.
      const live = (await payloadCount(ctx.admin, q.keys)) - c.dead;
      busy += live + c.leased + c.delayed;
      parts.push(`${q.name}: live ${live} leased ${c.leased} delayed ${c.delayed} dead ${c.dead}`);
    }
    if (busy === 0) return true;
    const line = parts.join('; ');
    if (line !== last && Math.random() < 0.05) say(`${ctx.s.id}: draining: ${line}`);
    last = line;
    await sleep(200);
  }
  return false;
}

async function deadEntries(ctx: Ctx) {
  const out: Array<{ queue: string; id: string; reason: string }> = [];
  for (const name of ctx.s.queues) {
    const q = new WorkQueue(ctx.admin, name, ctx.queueOpts());
    for (let offset = 0; ; offset += 1_000) {
      const page = await q.listDead({ offset, limit: 1_000 });
      for (const d of page) out.push({ queue: name, id: d.id, reason: d.reason });
      if (page.length < 1_000) break;
    }
  }
  return out;
}

async function resultKeys(ctx: Ctx): Promise<Set<string>> {
  const out = new Set<string>();
  for (const name of ctx.s.queues) {
    const q = new WorkQueue(ctx.admin, name, ctx.queueOpts());
    for (const id of await ctx.admin.hkeys(q.keys.base + 'res')) out.add(`${name}\t${id}`);
  }
  return out;
}

// The counters, the heartbeat record and the event log (a capped stream, kept by design).
const FINISHED_OK = new Set(['id', 'tok', 'wseq', 'hb', 'es']);
/**
 * Keys a finished queue keeps for a while besides its counters: caller ids of completed jobs
 * within their dedupe window (`ix`, and `~<until>` values in `ids`), and each producer's record
 * of its add calls (`ik:<session>`, expiring within a minute), cancel acknowledgements
 * (`ca:<id>`, a minute).
 */
const keptForAWhile = (k: string) =>
  k === 'ix' || k === 'ids' || k.startsWith('ik:') || k.startsWith('ca:');

/**
 * `live`: workers still run, the queue is drained. `closed`: every worker closed gracefully.
 * repair() finds nothing; the only keys are counters, the registry (live), the dead-letter set
 * and its jobs' data/meta/caller ids, the Nest cleaner's guard.
 */
async function endChecks(ctx: Ctx, phase: 'live' | 'closed'): Promise<void> {
  const c = ctx.admin;
  for (const name of ctx.s.queues) {
    const q = new WorkQueue(c, name, ctx.queueOpts());
    const rep = await q.repair();
    if (rep.fixes.length > 0)
      ctx.violation(
        `${phase}: repair() fixed ${rep.fixes.length}: ${rep.fixes.slice(0, 5).join(' | ')}`,
      );
    if (rep.tombstones > 0 && phase === 'live')
      ctx.note(`${name}: repair dropped ${rep.tombstones} tombstone(s) of cancelled jobs`);
    // A worker's lease set can still name jobs that finished elsewhere (reclaimed and completed
    // by another worker, leased by a call whose reply was lost): its next heartbeat drops them.
    // Give the live workers' heartbeats (every heartbeatTimeoutMs / 4: 750 ms at most here) a
    // few beats.
    for (let i = 0; phase === 'live' && i < 30; i++) {
      if ((await keysMatching(c, `${q.keys.base}wl:*`)).length === 0) break;
      await sleep(100);
    }
    const keys = (await keysMatching(c, `${q.keys.base}*`)).map((k) => k.slice(q.keys.base.length));
    const allowed = new Set([...FINISHED_OK, 'dead', 'd', 'm', 'ids', 'cleaner']);
    // Stored results (opt-in, with a TTL) are not keys of unfinished jobs.
    if (ctx.s.storeResults) allowed.add('res').add('rx');
    if (phase === 'live') allowed.add('w').add('pk'); // registered and parked workers
    // A worker's hand-off list lives from its idle wait's pop to its next call.
    // Payload buckets (d:<b>) and their set (db) hold dead jobs' payloads; checked below.
    const extra = keys.filter(
      (k) =>
        !allowed.has(k) &&
        !keptForAWhile(k) &&
        !(phase === 'live' && k.startsWith('hx:')) &&
        !k.startsWith('d:') &&
        k !== 'db',
    );
    const buckets = keys.filter((k) => k.startsWith('d:')).map((k) => k.slice(2));
    const registered = await c.smembers(q.keys.dataBuckets);
    if (buckets.sort().join() !== registered.sort().join())
      ctx.violation(
        `${phase}: ${name}: payload buckets ${buckets.join(',')} but the set says ${registered.join(',')}`,
      );
    for (const k of extra) {
      const type = await c.type(q.keys.base + k);
      const members =
        type === 'set' ? (await c.smembers(q.keys.base + k)).slice(0, 8).join(',') : type;
      ctx.violation(`${phase}: ${name}: unexpected key ${k} (${members})`);
    }
    const deadIds = new Set(await c.zrange(q.keys.dead, '0', '-1'));
    const dataIds = Object.keys(await allPayloads(c, q.keys));
    const metaIds = await c.hkeys(q.keys.base + 'm');
    const aliasIds = (await c.hvals(q.keys.base + 'ids')).filter((v) => !v.startsWith('~'));
    const stray = [...dataIds, ...metaIds, ...aliasIds].filter((id) => !deadIds.has(id));
    if (stray.length > 0)
      ctx.violation(
        `${phase}: ${name}: data of finished jobs left: ${stray.slice(0, 10).join(',')}`,
      );
    if (phase === 'closed') {
      const workers = await c.zrange(q.keys.workers, '0', '-1');
      if (workers.length > 0)
        ctx.violation(`closed: ${name}: workers still registered: ${workers.join(',')}`);
    }
  }
}

async function purgeAndCheck(ctx: Ctx): Promise<void> {
  const c = ctx.admin;
  for (const name of ctx.s.queues) {
    const q = new WorkQueue(c, name, ctx.queueOpts());
    await q.purgeDead();
    const keys = (await keysMatching(c, `${q.keys.base}*`)).map((k) => k.slice(q.keys.base.length));
    const results = ctx.s.storeResults ? ['res', 'rx'] : [];
    const extra = keys.filter(
      (k) => !FINISHED_OK.has(k) && !keptForAWhile(k) && k !== 'cleaner' && !results.includes(k),
    );
    if (extra.length > 0)
      ctx.violation(`after purgeDead: ${name}: keys left besides counters: ${extra.join(', ')}`);
  }
}

function reportEverysec(ctx: Ctx, a: Analysis): void {
  const kills = ctx.redisKills;
  ctx.note(
    `REPORT appendfsync everysec: ${a.lost} acknowledged job(s) missing at the end ` +
      `(${a.vanished.length} never ran), ${a.dupCompletions} completed twice, ${ctx.faults.length} Redis SIGKILLs`,
  );
  ctx.note(
    '  why: a SIGKILL of redis-server loses only what Redis had not yet write()n to the AOF. With ' +
      'everysec Redis writes the AOF buffer before it replies, except while the previous ' +
      "second's background fsync is still running (then it may hold writes up to 2 s): data " +
      'written but not fsynced sits in the OS page cache and survives a process kill. An OS ' +
      'crash or power loss loses what was not fsynced: up to ~1 s of acknowledged writes (2 s ' +
      'with a stalled disk). appendfsync always fsyncs before replying.',
  );
  for (const j of a.vanished.slice(0, 10)) {
    const before = kills.filter((k) => k >= j.ackAt!).map((k) => k - j.ackAt!);
    ctx.note(`  lost ${j.queue}/${j.ackId}: acknowledged ${before[0] ?? '?'} ms before a SIGKILL`);
  }
  // Report only: what was lost is not an invariant violation here.
  ctx.violations.splice(
    0,
    ctx.violations.length,
    ...ctx.violations.filter((v) => !/LOST|completed \d+ times|complete returned false/.test(v)),
  );
}

// ------------------------------------------------------------------------------ main

function table(rows: Row[]): string {
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
    `${seconds.toFixed(0)} s`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ');
  return [line(head), widths.map((w) => '-'.repeat(w)).join('-|-'), ...body.map(line)].join('\n');
}

async function main(): Promise<number> {
  const all = scenarios().filter((s) => !ONLY || ONLY.includes(s.id));
  const rows: Row[] = [];
  const t0 = Date.now();
  for (const [i, s] of all.entries()) rows.push(await runScenario(s, SEED + i));
  let failed = 0;
  const out: string[] = [];
  out.push(
    `\nFault-injection suite${QUICK ? ' (--quick)' : ''}: ${WORKERS} worker processes × concurrency ${CONCURRENCY}, clean() every ${CLEAN_INTERVAL_MS} ms, seed ${SEED}, ${fmt(Date.now() - t0)}\n`,
  );
  out.push(table(rows));
  out.push('');
  for (const { s, a, ctx } of rows) {
    const causes = [...a.causes].map(([k, n]) => `${k} ×${n}`).join('; ') || 'none';
    const dead = [...a.deadReasons].map(([k, n]) => `${k} ×${n}`).join('; ') || 'none';
    out.push(`${s.id} — ${s.title}`);
    out.push(`  faults: ${summarizeFaults(ctx.faults)}; recovery = ${s.recovery}`);
    out.push(`  duplicates/unseen explained by: ${causes}`);
    out.push(`  dead-lettered: ${dead}`);
    if (a.extraJobs > 0)
      out.push(
        `  extra jobs: ${a.extraJobs} (adds without a caller id whose reply was lost with the connection; ioredis re-sent them after reconnecting, so the job exists twice — caller ids make such re-sends harmless)`,
      );
    if (a.refused > 0) out.push(`  adds refused (not acknowledged, not retried): ${a.refused}`);
    const t = ctx.cleanTotals;
    if (s.cleaner === 'module') out.push("  clean(): the module's own cleaner (not counted)");
    else
      out.push(
        `  clean(): ${t.rounds} runs (${t.errors} failed), expired leases ${t.reclaimed}, dead workers ${t.deadWorkers} (${t.reclaimedFromWorkers} jobs), dead-lettered ${t.deadLettered}`,
      );
    if (ctx.leaseRelease.length)
      out.push(
        `  dead worker's leases gone after p50 ${fmt(quantile(ctx.leaseRelease, 0.5))}, max ${fmt(Math.max(...ctx.leaseRelease))}`,
      );
    for (const n of ctx.notes) out.push(`  ${n}`);
    const violations = [...ctx.violations, ...a.violations];
    if (s.reportOnly) {
      const keep = violations.filter(
        (v) => !/LOST|completed \d+ times|complete returned false|run twice/.test(v),
      );
      violations.splice(0, violations.length, ...keep);
    }
    if (violations.length > 0) {
      failed += 1;
      out.push(`  FAILED: ${violations.length} invariant violation(s):`);
      for (const v of violations.slice(0, 20)) out.push(`    - ${v}`);
      out.push(`    logs kept in ${ctx.logDir}`);
    }
  }
  out.push(failed === 0 ? '\nall invariants held' : `\n${failed} scenario(s) FAILED`);
  process.stdout.write(out.join('\n') + '\n');
  return failed === 0 ? 0 : 1;
}

function summarizeFaults(faults: Fault[]): string {
  const m = new Map<string, number>();
  for (const f of faults) m.set(f.kind, (m.get(f.kind) ?? 0) + 1);
  return [...m].map(([k, n]) => `${k} ×${n}`).join(', ') || 'none (handler behaviours only)';
}

const guard = setTimeout(() => {
  process.stderr.write(`[faults] global timeout after ${GLOBAL_TIMEOUT_MS} ms\n`);
  process.exit(2);
}, GLOBAL_TIMEOUT_MS);
guard.unref();

process.on('unhandledRejection', (e) => say(`unhandled rejection: ${errorMessage(e)}`));

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`[faults] crashed: ${e instanceof Error ? e.stack : String(e)}\n`);
    process.exit(2);
  },
);
