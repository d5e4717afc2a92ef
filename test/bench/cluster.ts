/**
 * Benchmark: nestjs-work-queue on a Redis Cluster (3 masters) against one private redis-server.
 *
 *   npm run bench:cluster                    # K = 1, 3, 6 queues, 10 000 jobs each, 3 repetitions
 *   npm run bench:cluster -- --quick         # 2 000 jobs per queue, 1 repetition
 *   node --import ./scripts/register-ts.mjs test/bench/cluster.ts --help
 *
 * How it measures:
 * - It starts a private Redis Cluster (test/support/redis-cluster.ts: 3 masters, by default
 *   with 1 replica each, as the helper does) and a private `redis-server`
 *   (test/support/redis-server.ts). Neither persists anything (the cluster helper's AOF is
 *   turned off with extra args), so the two differ only in clustering.
 * - Queue names are picked with `CLUSTER KEYSLOT` on the queue's hash-tagged key so that they
 *   spread round-robin over the masters: K=1 uses one master, K=3 one queue per master, K=6
 *   two queues per master. The single Redis uses the same names.
 * - For every K and target: FLUSHALL (every master), then N jobs are added to each of the K
 *   queues with addBulk; then K child processes (one per queue; test/bench/cluster-child.ts)
 *   each connect (ioredis `Redis` or `Cluster` client), and on a common "go" start one Worker
 *   (concurrency 50, no-op handler). Throughput = K·N / (last completion − first handler
 *   call), both taken across all children on the wall clock.
 * - Repetitions loop over all K; the order of the two targets alternates. Reported: the
 *   median, and min–max, of the repetitions; ratio = cluster median / single median.
 *
 * Flags:
 *   --n <jobs>          jobs per queue (default 10000; --quick: 2000)
 *   --reps <k>          repetitions (default 3; --quick: 1)
 *   --queues <list>     queue counts, comma-separated (default 1,3,6)
 *   --concurrency <c>   worker concurrency (default 50)
 *   --replicas <r>      replicas per cluster master (default 1)
 *   --quick            n=2000, 1 repetition (explicit flags win)
 *   --help             print this text
 *
 * Progress goes to stderr; the table to stdout. Exit code 1 when any measurement failed.
 * Not part of `npm test`: timings are never asserted.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import { QUEUE_DEFAULTS, queueKeys } from '../../lib/index.js';
import {
  CLUSTER_CLIENT_OPTIONS,
  startRedisCluster,
  type RedisClusterHandle,
} from '../support/redis-cluster.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import type { Target } from './cluster-child.js';
import { measure, type Env } from './cluster-measure.js';
import { errorText, info, median } from './util.js';

const SELF = fileURLToPath(import.meta.url);

function helpText(): string {
  const lines = readFileSync(SELF, 'utf8').split('\n');
  const end = lines.findIndex((l) => l.startsWith(' */'));
  return lines
    .slice(1, end)
    .map((l) => l.replace(/^ \* ?/, ''))
    .join('\n');
}

const log = (line: string) => process.stderr.write(`${line}\n`);

function intFlag(name: string, v: string | undefined, fallback: number, min: number): number {
  if (v === undefined) return fallback;
  const x = Number(v);
  if (!Number.isInteger(x) || x < min) throw new Error(`--${name} must be an integer >= ${min}`);
  return x;
}

interface Settings {
  n: number;
  reps: number;
  queues: number[];
  concurrency: number;
  replicas: number;
}

function settings(): Settings | undefined {
  const { values } = parseArgs({
    options: {
      n: { type: 'string' },
      reps: { type: 'string' },
      queues: { type: 'string' },
      concurrency: { type: 'string' },
      replicas: { type: 'string' },
      quick: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${helpText()}\n`);
    return undefined;
  }
  const quick = values.quick ?? false;
  const queues = (values.queues ?? '1,3,6').split(',').map((s) => intFlag('queues', s, 0, 1));
  return {
    n: intFlag('n', values.n, quick ? 2000 : 10_000, 1),
    reps: intFlag('reps', values.reps, quick ? 1 : 3, 1),
    queues,
    concurrency: intFlag('concurrency', values.concurrency, 50, 1),
    replicas: intFlag('replicas', values.replicas, 1, 0),
  };
}

/** Queue names spread round-robin over the masters (by the slot of their hash tag). */
async function pickQueueNames(cluster: RedisClusterHandle, count: number): Promise<string[]> {
  const topo = (await cluster.topology()).filter((t) => t.role === 'master' && t.slots.length);
  topo.sort((a, b) => a.slots[0]![0] - b.slots[0]![0]);
  const perMaster = topo.map(() => [] as string[]);
  const need = Math.ceil(count / topo.length);
  for (let i = 0; perMaster.some((l) => l.length < need); i++) {
    if (i > 10_000) throw new Error('could not find queue names for every master');
    const name = `bench${i}`;
    const slot = await cluster.keySlot(queueKeys(QUEUE_DEFAULTS.prefix, name).wake);
    const m = topo.findIndex((t) => t.slots.some(([a, b]) => slot >= a && slot <= b));
    if (m >= 0 && perMaster[m]!.length < need) perMaster[m]!.push(name);
  }
  const names: string[] = [];
  for (let j = 0; names.length < count; j++) {
    for (const l of perMaster) if (names.length < count && l[j]) names.push(l[j]!);
  }
  const where = await Promise.all(
    names.map(async (q) => {
      const slot = await cluster.keySlot(queueKeys(QUEUE_DEFAULTS.prefix, q).wake);
      return `${q}→slot ${slot}@${(await cluster.ownerOf(slot)).master.port}`;
    }),
  );
  log(`[bench] queues: ${where.join(', ')}`);
  return names;
}

const fmt = (x: number) => Math.round(x).toLocaleString('en-US');

async function main(): Promise<number> {
  const s = settings();
  if (!s) return 0;
  let single: RedisHandle | undefined;
  let cluster: RedisClusterHandle | undefined;
  let singleClient: Redis | undefined;
  let clusterClient: Cluster | undefined;
  let failed = false;
  try {
    log(
      `[bench] starting a private redis-server and a 3-master cluster (${s.replicas} replica(s) each)`,
    );
    single = await startRedis();
    cluster = await startRedisCluster({
      replicasPerMaster: s.replicas,
      // The helper turns AOF (fsync always) on for failover tests; a benchmark compares
      // clustering only, like the single server: no persistence.
      extraArgs: ['--appendonly', 'no'],
    });
    singleClient = new Redis({ host: single.host, port: single.port });
    clusterClient = new Cluster(cluster.nodes, CLUSTER_CLIENT_OPTIONS);
    clusterClient.on('error', () => {});
    const env: Env = { single, cluster, singleClient, clusterClient };
    const names = await pickQueueNames(cluster, Math.max(...s.queues));
    const redisVersion = (await info(singleClient, 'server')).get('redis_version') ?? '?';

    const results = new Map<string, number[]>();
    for (let rep = 0; rep < s.reps; rep++) {
      for (const k of s.queues) {
        const order: Target[] = rep % 2 === 0 ? ['single', 'cluster'] : ['cluster', 'single'];
        for (const target of order) {
          const key = `${k}/${target}`;
          try {
            const rate = await measure(env, target, names.slice(0, k), s);
            log(`[bench] rep ${rep + 1}/${s.reps} K=${k} ${target}: ${fmt(rate)} jobs/s`);
            results.set(key, [...(results.get(key) ?? []), rate]);
          } catch (e) {
            failed = true;
            log(`[bench] rep ${rep + 1}/${s.reps} K=${k} ${target} FAILED: ${errorText(e)}`);
          }
        }
      }
    }

    const cell = (v: number[] | undefined) =>
      v && v.length
        ? `${fmt(median(v))} (${fmt(Math.min(...v))}–${fmt(Math.max(...v))})`
        : 'failed';
    const rows = s.queues.map((k) => {
      const a = results.get(`${k}/single`);
      const b = results.get(`${k}/cluster`);
      const ratio = a?.length && b?.length ? `${(median(b) / median(a)).toFixed(2)}×` : '–';
      return [String(k), cell(a), cell(b), ratio];
    });
    const head = ['queues', 'single Redis jobs/s', 'cluster (3 masters) jobs/s', 'cluster/single'];
    const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
    const cpus = os.cpus();
    const out = [
      `env: ${new Date().toISOString()}, ${cpus.length} cores (${cpus[0]?.model.trim() ?? '?'}), ` +
        `node ${process.version}, redis ${redisVersion}; ` +
        `${s.n} jobs/queue, ${s.reps} rep(s), concurrency ${s.concurrency}, one worker process per queue, ` +
        `cluster: 3 masters + ${3 * s.replicas} replica(s), no persistence`,
      '',
      line(head),
      line(widths.map((w) => '-'.repeat(w))),
      ...rows.map(line),
      '',
      'jobs/s: median (min–max) over the repetitions, from the first handler call to the last completion.',
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } catch (e) {
    failed = true;
    log(`[bench] FAILED: ${errorText(e)}`);
  } finally {
    clusterClient?.disconnect();
    singleClient?.disconnect();
    await cluster?.dispose().catch((e: unknown) => log(`[bench] cluster dispose: ${errorText(e)}`));
    await single?.dispose().catch((e: unknown) => log(`[bench] redis dispose: ${errorText(e)}`));
  }
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    log(`[bench] FAILED: ${errorText(e)}`);
    process.exit(1);
  },
);
