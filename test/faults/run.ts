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
 * Issue 12's scenarios (`defaults`, `poison`, `client-kill`) live in scenarios/issue12.ts, issue
 * 24's (`client-kill-completing`, `redis-defaults`) in scenarios/issue24.ts; the table also
 * reports, for every scenario, recovery p50/p90/max, dead-lettered bystanders (where measured),
 * the slowest add→start, the drain after the last add, adds completed twice, jobs run again
 * after a handler of that attempt ended, and resume p50/max after each Redis restart and each
 * CLIENT KILL (measure.ts, metrics.ts, deaths.ts) — violations only behind the scenarios'
 * `assert*` flags.
 * Prints a table and exits non-zero when an invariant fails.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { errorMessage, RECONNECT_OPTIONS } from '../../lib/index.js';
import { startRedis } from '../support/redis-server.js';
import { analyze, quantile } from './analyze.js';
import { startCleaner } from './cleaner.js';
import { readLogs } from './logs.js';
import { measure } from './measure.js';
import type { NestWorkerConfig } from './nest-worker.js';
import { Pool } from './procs.js';
import { produce } from './producer.js';
import { summarizeFaults, table, type Row } from './report.js';
import type { WorkerProcConfig } from './worker-proc.js';
import {
  CLEAN_INTERVAL_MS,
  CONCURRENCY,
  fmt,
  KEEP_LOGS,
  ONLY,
  QUICK,
  say,
  SEED,
  WORKERS,
} from './common.js';
import { Ctx, resultsOption, type Scenario } from './ctx.js';
import { scenarios } from './scenarios/core.js';
import {
  deadEntries,
  drain,
  endChecks,
  purgeAndCheck,
  reclaimedFromDead,
  reportEverysec,
  resultKeys,
} from './checks.js';

const GLOBAL_TIMEOUT_MS = QUICK ? 6 * 60_000 : 15 * 60_000;

async function runScenario(s: Scenario, seed: number): Promise<Row> {
  const started = Date.now();
  const logDir = mkdtempSync(path.join(os.tmpdir(), `wq-faults-${s.id}-`));
  const redis = await startRedis(s.redis);
  const admin = new Redis(redis.url, { maxRetriesPerRequest: null, ...RECONNECT_OPTIONS });
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
    // Wait until no job of any queue is pending, delayed or leased (dead ones stay).
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
    if (s.id.startsWith('redis') || s.id === 'connections' || s.id.startsWith('client-kill')) {
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
    if (s.assertLiveWorkers) {
      const n = await reclaimedFromDead(ctx);
      ctx.note(`jobs reclaimed from live workers judged dead: ${n}`);
      if (n > 0) ctx.violation(`${n} job(s) reclaimed from live workers judged dead`);
    }
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

// ------------------------------------------------------------------------------ main

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
