/**
 * Benchmark: nestjs-work-queue ("ours") against BullMQ and Bee-Queue, and against two floors
 * (what Redis allows at best for a list queue), on a private Redis.
 *
 *   npm run bench                      # everything, sensible defaults (a few minutes)
 *   npm run bench -- --quick           # everything, small N, 1 repetition (under a minute)
 *   npm run bench -- --only c50,latency --libs ours,bullmq --reps 5
 *   node --import ./scripts/register-ts.mjs test/bench/run.ts --help
 *
 * How it measures:
 * - It starts its own `redis-server` (test/support/redis-server.ts; no persistence unless
 *   `--aof`) and, for the `aof` figure, a second one with `appendonly yes, appendfsync
 *   everysec`. Before every measurement: FLUSHALL + SCRIPT FLUSH.
 * - EACH measurement runs in a fresh child process (test/bench/child.ts) that warms the same
 *   code path up untimed first (JIT), then measures and prints one JSON line. The throughput
 *   rows warm up for at least a second (--warmup-ms), the same time for every library: a
 *   library that batches runs its per-call code once per batch, so a warm-up of 1 000 jobs
 *   left that code barely run (ours: ~30 calls at 64 concurrent callers). Multi-process
 *   scaling runs start several children and coordinate them over IPC.
 * - Repetitions loop over all figures; the order of libraries rotates from one repetition to
 *   the next. Reported: the median, and min–max, of the repetitions.
 * - Libraries are driven through test/bench/libs/{ours,bullmq,bee}.ts with their best
 *   options (printed in the header): BullMQ removes completed jobs, no QueueEvents; Bee-Queue
 *   removeOnSuccess, no events, no job map.
 * - The floors, measured like libraries in the same run: "bare list" (libs/bare.ts: LPUSH to
 *   add, LMOVE / BLMOVE to take, nothing else) and "fused Lua list" (libs/fused.ts: payloads
 *   inline in the list, one script per batch completing the previous jobs and popping the
 *   next). Neither retries, so they sit out the mixed workload.
 * - Two tables: the values of every library, then ours over each of the others (ours/bare
 *   list, ours/fused Lua: ours as a fraction of the floor).
 * - Newer rows live in rows/*.ts: concurrent add, first job, memory per worker, scale,
 *   sandboxed handlers (ours and BullMQ only), groups.
 *
 * Flags:
 *   --quick            n=1000, 1 repetition, warm-up 200, 50 latency samples, bytes-n 5000
 *                      (explicit flags win)
 *   --n <jobs>         jobs per throughput figure (default 10000; process c=1 uses n/2)
 *   --concurrency <c>  worker concurrency of the "c=50" figures (default 50)
 *   --libs <list>      libraries, comma-separated: ours,bullmq,bee,bare,fused (default all)
 *   --only <list>      figures, comma-separated (default all but scale): add, addBulk, c1, c50,
 *                      latency, bytes, commands (from the c50 run), aof, scaling, payload, mixed,
 *                      addConcurrent, firstJob, memory, scale, keep (c=50 keeping the newest
 *                      1 000 completed jobs: ours' default, BullMQ removeOnComplete { count:
 *                      1000 }; every other figure removes them in every library), sandbox, groups
 *                      (ours: c=50 ungrouped / over 1 000 groups / named, bytes per grouped job),
 *                      fairness (ours, BullMQ), flows
 *   --callers <k>      addConcurrent: concurrent callers on one queue object (default 64)
 *   --first-samples <k> firstJob: worker starts per child, one job waiting (default 7; quick 3)
 *   --mem-workers <l>  memory: idle worker counts, one fresh child each (default 1,10,30); each
 *                      worker at concurrency 5 on its own queue; the child runs --expose-gc
 *   --scale            add the scale figure (slow; `--only scale` runs it alone): addBulk,
 *                      lease+complete and Redis bytes/job at --scale-n and at --scale-base
 *                      waiting jobs; ours and the fused floor only (libraries with a direct
 *                      lease/complete call)
 *   --scale-n <jobs>   default 1000000
 *   --scale-base <jobs> default 20000
 *   --reps <k>         repetitions (default 3; --quick: 1)
 *   --aof              run the main Redis with appendonly yes, appendfsync everysec
 *   --json             also print the result as ONE JSON line, last on stdout:
 *                      { "rows": [{ id, figure, libs, ours, bullmq, beeQueue, bare, fused,
 *                        ratio (ours/BullMQ), ratioBee, ratioBare, ratioFused, target, met,
 *                        range, samples, ... }],
 *                        "env": { ... } }
 *   --warmup <jobs>    untimed warm-up jobs per child (default min(1000, n))
 *   --warmup-ms <ms>   throughput rows (add, addBulk, addConcurrent, c1, c50, aof, scaling,
 *                      payload, mixed, keep) repeat the warm-up until this long has passed,
 *                      the same for every library (default 1000; --quick 0)
 *   --samples <k>      idle-latency samples (default 500)
 *   --spacing <ms>     pause between latency samples, so the worker is idle again (default 5)
 *   --bytes-n <jobs>   jobs added for the bytes-per-waiting-job figure (default 20000)
 *   --bulk-size <k>    jobs per addBulk / saveAll call (default 1000)
 *   --timeout <s>      per-child time limit (default 60 + n/500)
 *   --cpu-prof         write V8 CPU profiles of every child to .tmp/bench-prof/<figure-lib-rep>/
 *                      (one file per thread; the main thread's is the biggest)
 *   --help             print this text
 *
 * Progress goes to stderr; the table (and the JSON line) to stdout. Exit code 1 when any
 * measurement failed. Not part of `npm test`: timings are never asserted.
 */
import os from 'node:os';
import { Redis } from 'ioredis';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { indent, live, runMulti, spawnChild } from './children.js';
import { describeLib } from './libs/settings.js';
import { LIB_LABELS } from './libs/types.js';
import { parseSettings } from './options.js';
import { plan } from './plan.js';
import type { Measurement, ServerName } from './row.js';
import type { ChildParams, ChildResult } from './protocol.js';
import { buildRows, renderRatios, renderValues, summarize } from './report.js';
import { errorText, info } from './util.js';

// ------------------------------------------------------------------------------ main

async function flush(client: Redis): Promise<void> {
  await client.call('FLUSHALL', 'SYNC');
  await client.call('SCRIPT', 'FLUSH', 'SYNC');
}

async function main(): Promise<number> {
  const s = parseSettings(process.argv.slice(2));
  const started = Date.now();
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const { measurements, specs } = plan(s);

  const servers = new Map<ServerName, { handle: RedisHandle; client: Redis }>();
  const startServer = async (name: ServerName, aof: boolean) => {
    const handle = await startRedis(aof ? { appendonly: true, appendfsync: 'everysec' } : {});
    const client = new Redis({ host: handle.host, port: handle.port });
    servers.set(name, { handle, client });
    log(
      `[bench] ${name} redis-server at ${handle.url} (${aof ? 'AOF everysec' : 'no persistence'})`,
    );
  };
  const stopAll = async () => {
    for (const child of live) child.kill('SIGKILL');
    for (const { handle, client } of servers.values()) {
      client.disconnect();
      await handle.dispose();
    }
    servers.clear();
  };
  process.once('SIGINT', () => {
    void stopAll().finally(() => process.exit(130));
  });

  try {
    await startServer('main', s.aof);
    if (measurements.some((m) => m.server === 'aof')) {
      if (s.aof) servers.set('aof', servers.get('main')!);
      else await startServer('aof', true);
    }
    const main = servers.get('main')!;
    const server = await info(main.client, 'server');
    const descriptions = s.libs.map(describeLib);
    const cpus = os.cpus();
    const env = {
      date: new Date().toISOString(),
      node: process.version,
      redis: server.get('redis_version') ?? '?',
      redisPersistence: s.aof ? 'AOF appendfsync everysec' : 'none (save "", appendonly no)',
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      cpu: cpus[0]?.model ?? '?',
      cores: cpus.length,
      loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
      settings: {
        quick: s.quick,
        n: s.n,
        nC1: Math.ceil(s.n / 2),
        concurrency: s.concurrency,
        reps: s.reps,
        warmup: s.warmup,
        warmupMs: s.warmupMs,
        latencySamples: s.samples,
        latencySpacingMs: s.spacingMs,
        bytesN: s.bytesN,
        bulkSize: s.bulkSize,
        callers: s.callers,
        firstJobSamples: s.firstSamples,
        memWorkers: s.memWorkers,
        scaleN: s.only.includes('scale') ? s.scaleN : null,
        scaleBase: s.only.includes('scale') ? s.scaleBase : null,
        libs: s.libs,
        only: s.only,
      },
      libraries: Object.fromEntries(descriptions.map((d) => [d.lib, d])),
    };

    const results = new Map<string, ChildResult[]>();
    let failures = 0;
    const libsOf = (m: Measurement) => s.libs.filter((l) => !m.libs || m.libs.includes(l));
    const total = s.reps * measurements.reduce((a, m) => a + libsOf(m).length, 0);
    let done = 0;
    for (let rep = 0; rep < s.reps; rep++) {
      const order = s.libs.map((_, i) => s.libs[(i + rep) % s.libs.length]!);
      for (const m of measurements) {
        for (const lib of order) {
          if (!libsOf(m).includes(lib)) continue;
          done += 1;
          const { handle, client } = servers.get(m.server)!;
          await flush(client);
          const params: ChildParams = {
            ...m.params,
            host: handle.host,
            port: handle.port,
            procs: m.procs,
            index: 0,
            timeoutMs: m.timeoutMs ?? s.timeoutMs,
          };
          const tag = `${m.id}-${lib}-rep${rep + 1}`;
          const prefix = `[${done}/${total}] rep ${rep + 1} ${m.id} ${LIB_LABELS[lib]}`;
          const t0 = Date.now();
          try {
            const r =
              m.procs > 1
                ? await runMulti(s, lib, m, params, tag)
                : await spawnChild(s, lib, m, params, tag).result;
            const key = `${m.id}/${lib}`;
            results.set(key, [...(results.get(key) ?? []), r]);
            log(`${prefix}: ${summarize(r)} [child ${((Date.now() - t0) / 1000).toFixed(1)} s]`);
          } catch (e) {
            failures += 1;
            log(`${prefix}: FAILED\n${indent(e instanceof Error ? e.message : String(e))}`);
          }
        }
      }
    }

    const rows = buildRows(specs, results, s);
    const out: string[] = [];
    out.push(`nestjs-work-queue benchmark — ${env.date}`);
    out.push(
      `node ${env.node}, redis ${env.redis} (${env.redisPersistence}), ${env.cpu}, ${env.cores} cores, ${env.platform}, load ${env.loadAverageAtStart.join(' ')}`,
    );
    out.push(
      `n=${s.n} (c=1: ${Math.ceil(s.n / 2)}), concurrency ${s.concurrency}, ${s.reps} repetition(s)${s.quick ? ' [--quick: indicative only]' : ''}, warm-up ${s.warmup} jobs per child${s.warmupMs > 0 ? ` (throughput rows: rounds of them for ${s.warmupMs} ms)` : ''}, latency ${s.samples} samples ${s.spacingMs} ms apart, addBulk ${s.bulkSize} per call`,
    );
    for (const d of descriptions) {
      out.push(
        `${d.label}: ${Object.entries(d.versions)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
      );
      for (const [k, v] of Object.entries(d.options)) out.push(`  ${k}: ${v}`);
    }
    out.push(
      'Cells: median (min–max) over repetitions; — not measured. Ratios: of medians, for every row (ours/bare list and ours/fused Lua: ours as a fraction of the floor); the arrow says which direction is better.',
    );
    out.push('');
    out.push(renderValues(specs, rows, s));
    out.push('');
    out.push(renderRatios(rows));
    out.push('');
    out.push(
      `${failures === 0 ? 'all measurements succeeded' : `${failures} measurement(s) FAILED`}; ${((Date.now() - started) / 1000).toFixed(0)} s`,
    );
    process.stdout.write(`${out.join('\n')}\n`);
    if (s.json) {
      process.stdout.write(
        `${JSON.stringify({ rows, env: { ...env, failures, seconds: (Date.now() - started) / 1000 } })}\n`,
      );
    }
    return failures === 0 ? 0 : 1;
  } finally {
    await stopAll();
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`[bench] ${errorText(e)}\n`);
    process.exit(2);
  },
);
