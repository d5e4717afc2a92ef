/**
 * Benchmark: nestjs-work-queue ("ours") against BullMQ and Bee-Queue, on a private Redis.
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
 *   code path up untimed first (JIT), then measures and prints one JSON line. Multi-process
 *   scaling runs start several children and coordinate them over IPC.
 * - Repetitions loop over all figures; the order of libraries rotates from one repetition to
 *   the next. Reported: the median, and min–max, of the repetitions.
 * - Libraries are driven through test/bench/libs/{ours,bullmq,bee}.ts with their best
 *   options (printed in the header): BullMQ removes completed jobs, no QueueEvents; Bee-Queue
 *   removeOnSuccess, no events, no job map.
 *
 * Flags:
 *   --quick            n=1000, 1 repetition, warm-up 200, 50 latency samples, bytes-n 5000
 *                      (explicit flags win)
 *   --n <jobs>         jobs per throughput figure (default 10000; process c=1 uses n/2)
 *   --concurrency <c>  worker concurrency of the "c=50" figures (default 50)
 *   --libs <list>      libraries, comma-separated: ours,bullmq,bee (default all three)
 *   --only <list>      figures, comma-separated (default all): add, addBulk, c1, c50, latency,
 *                      bytes, commands (from the c50 run), aof, scaling, payload, mixed
 *   --reps <k>         repetitions (default 3; --quick: 1)
 *   --aof              run the main Redis with appendonly yes, appendfsync everysec
 *   --json             also print the result as ONE JSON line, last on stdout:
 *                      { "rows": [{ figure, ours, bullmq, beeQueue, ratio, target, met, ... }],
 *                        "env": { ... } }
 *   --warmup <jobs>    untimed warm-up jobs per child (default min(1000, n))
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
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { describeLib } from './libs/settings.js';
import { LIB_LABELS, LIBS, type LibName } from './libs/types.js';
import type {
  ChildFailure,
  ChildKind,
  ChildMessage,
  ChildParams,
  ChildResult,
  ParentMessage,
} from './protocol.js';
import { errorText, info, median } from './util.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** --help: the header comment above. */
function helpText(): string {
  const lines = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n');
  const end = lines.findIndex((l) => l.startsWith(' */'));
  return lines
    .slice(1, end)
    .map((l) => l.replace(/^ \* ?/, ''))
    .join('\n');
}

// ------------------------------------------------------------------------------------ flags

const GROUPS = [
  'add',
  'addBulk',
  'c1',
  'c50',
  'latency',
  'bytes',
  'commands',
  'aof',
  'scaling',
  'payload',
  'mixed',
] as const;
type Group = (typeof GROUPS)[number];

const LIB_ALIASES: Record<string, LibName | undefined> = {
  ours: 'ours',
  bullmq: 'bullmq',
  bee: 'bee',
  'bee-queue': 'bee',
  beequeue: 'bee',
};

interface Settings {
  quick: boolean;
  n: number;
  concurrency: number;
  libs: LibName[];
  only: Group[];
  reps: number;
  aof: boolean;
  json: boolean;
  warmup: number;
  samples: number;
  spacingMs: number;
  bytesN: number;
  bulkSize: number;
  timeoutMs: number;
  cpuProf: boolean;
}

function parseSettings(argv: string[]): Settings {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean' },
      n: { type: 'string' },
      concurrency: { type: 'string' },
      libs: { type: 'string' },
      only: { type: 'string' },
      reps: { type: 'string' },
      aof: { type: 'boolean' },
      json: { type: 'boolean' },
      warmup: { type: 'string' },
      samples: { type: 'string' },
      spacing: { type: 'string' },
      'bytes-n': { type: 'string' },
      'bulk-size': { type: 'string' },
      timeout: { type: 'string' },
      'cpu-prof': { type: 'boolean' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${helpText()}\n`);
    process.exit(0);
  }
  const int = (name: string, v: string | undefined, dflt: number, min = 1): number => {
    if (v === undefined) return dflt;
    const x = Number(v);
    if (!Number.isInteger(x) || x < min) throw new Error(`--${name} must be an integer >= ${min}`);
    return x;
  };
  const quick = values.quick ?? false;
  const n = int('n', values.n, quick ? 1000 : 10_000);
  const libs = (values.libs ?? LIBS.join(','))
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean)
    .map((s) => {
      const lib = LIB_ALIASES[s];
      if (!lib) throw new Error(`--libs: unknown library ${JSON.stringify(s)} (ours, bullmq, bee)`);
      return lib;
    });
  const only = (values.only ?? GROUPS.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const g = GROUPS.find((x) => x.toLowerCase() === s.toLowerCase());
      if (!g) throw new Error(`--only: unknown figure ${JSON.stringify(s)} (${GROUPS.join(', ')})`);
      return g;
    });
  if (libs.length === 0 || only.length === 0) throw new Error('--libs and --only need a value');
  return {
    quick,
    n,
    concurrency: int('concurrency', values.concurrency, 50),
    libs: [...new Set(libs)],
    only: [...new Set(only)],
    reps: int('reps', values.reps, quick ? 1 : 3),
    aof: values.aof ?? false,
    json: values.json ?? false,
    warmup: int('warmup', values.warmup, Math.min(quick ? 200 : 1000, n)),
    samples: int('samples', values.samples, quick ? 50 : 500),
    spacingMs: int('spacing', values.spacing, 5, 0),
    bytesN: int('bytes-n', values['bytes-n'], quick ? 5000 : 20_000),
    bulkSize: int('bulk-size', values['bulk-size'], 1000),
    timeoutMs: int('timeout', values.timeout, Math.round(60 + n / 500)) * 1000,
    cpuProf: values['cpu-prof'] ?? false,
  };
}

// ------------------------------------------------------------------------------ the plan

type ServerName = 'main' | 'aof';

/** One measurement: one child (or `procs` coordinated children) per library and repetition. */
interface Measurement {
  id: string;
  kind: ChildKind;
  procs: number;
  server: ServerName;
  params: Omit<ChildParams, 'host' | 'port' | 'index' | 'procs' | 'timeoutMs'>;
}

function plan(s: Settings): Measurement[] {
  const base = {
    n: s.n,
    warmup: s.warmup,
    concurrency: s.concurrency,
    payloadBytes: 0,
    bulkSize: s.bulkSize,
    failEvery: 0,
    samples: 0,
    spacingMs: 0,
  };
  const proc = (
    id: string,
    extra: Partial<Measurement['params']> = {},
    procs = 1,
  ): Measurement => ({
    id,
    kind: 'process',
    procs,
    server: 'main',
    params: { ...base, ...extra },
  });
  const all: Record<string, Measurement> = {
    add: { id: 'add', kind: 'add', procs: 1, server: 'main', params: base },
    addBulk: { id: 'addBulk', kind: 'addBulk', procs: 1, server: 'main', params: base },
    c1: proc('c1', {
      concurrency: 1,
      n: Math.ceil(s.n / 2),
      warmup: Math.min(s.warmup, Math.ceil(s.n / 2)),
    }),
    c50: proc('c50'),
    latency: {
      id: 'latency',
      kind: 'latency',
      procs: 1,
      server: 'main',
      params: {
        ...base,
        concurrency: 1,
        samples: s.samples,
        warmup: Math.min(50, s.samples),
        spacingMs: s.spacingMs,
      },
    },
    bytes: {
      id: 'bytes',
      kind: 'bytes',
      procs: 1,
      server: 'main',
      params: { ...base, n: s.bytesN, warmup: 100 },
    },
    aof: { ...proc('aof'), server: 'aof' },
    scale2: proc('scale2', {}, 2),
    scale4: proc('scale4', {}, 4),
    payload100: proc('payload100', { payloadBytes: 100 }),
    payload10k: proc('payload10k', { payloadBytes: 10 * 1024 }),
    mixed: proc('mixed', { failEvery: 10 }),
  };
  const wanted: Record<Group, string[]> = {
    add: ['add'],
    addBulk: ['addBulk'],
    c1: ['c1'],
    c50: ['c50'],
    commands: ['c50'],
    latency: ['latency'],
    bytes: ['bytes'],
    aof: ['aof'],
    scaling: ['c50', 'scale2', 'scale4'],
    payload: ['payload100', 'payload10k'],
    mixed: ['mixed'],
  };
  const ids = new Set(s.only.flatMap((g) => wanted[g]));
  return Object.values(all).filter((m) => ids.has(m.id));
}

// ------------------------------------------------------------------------------ children

const live = new Set<ChildProcess>();

interface Spawned {
  child: ChildProcess;
  result: Promise<ChildResult>;
}

function spawnChild(
  s: Settings,
  lib: LibName,
  m: Measurement,
  params: ChildParams,
  tag: string,
): Spawned {
  const nodeArgs: string[] = [];
  if (s.cpuProf) {
    // One directory per child: each thread (main, loader hooks, heartbeat) writes its own file.
    const dir = path.join(ROOT, '.tmp', 'bench-prof', tag);
    mkdirSync(dir, { recursive: true });
    nodeArgs.push('--cpu-prof', '--cpu-prof-dir', dir);
  }
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
      '--import',
      './scripts/register-ts.mjs',
      'test/bench/child.ts',
      lib,
      m.kind,
      JSON.stringify(params),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe', ...(m.procs > 1 ? ['ipc' as const] : [])] },
  );
  live.add(child);
  let out = '';
  let err = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString('utf8')));
  child.stderr?.on('data', (c: Buffer) => {
    err += c.toString('utf8');
    if (err.length > 64 * 1024) err = err.slice(-64 * 1024);
  });
  const killTimer = setTimeout(() => child.kill('SIGKILL'), params.timeoutMs + 15_000);
  const result = new Promise<ChildResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(killTimer);
      live.delete(child);
      const last = out.trim().split('\n').pop() ?? '';
      let line: ChildResult | ChildFailure | undefined;
      try {
        line = JSON.parse(last) as ChildResult | ChildFailure;
      } catch {
        line = undefined;
      }
      if (line?.ok) {
        if (err.trim()) process.stderr.write(indent(`[${tag}] stderr:\n${err.trim()}`));
        resolve(line);
        return;
      }
      const why = line
        ? line.error
        : `exit code ${code}, signal ${signal}, stdout ${JSON.stringify(last)}`;
      reject(new Error(`${why}${err.trim() ? `\n--- stderr ---\n${err.trim()}` : ''}`));
    });
  });
  return { child, result };
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n') + '\n';

/** `procs` coordinated worker processes on one queue: total jobs/s, first start → last end. */
async function runMulti(
  s: Settings,
  lib: LibName,
  m: Measurement,
  base: ChildParams,
  tag: string,
): Promise<ChildResult> {
  const children = Array.from({ length: m.procs }, (_, index) =>
    spawnChild(s, lib, m, { ...base, procs: m.procs, index }, `${tag}-p${index}`),
  );
  const counts = new Array<number>(m.procs).fill(0);
  let readyCount = 0;
  let stopped = false;
  const send = (msg: ParentMessage) => {
    for (const { child } of children) if (child.connected) child.send(msg);
  };
  const allReady = new Promise<void>((resolve) => {
    children.forEach(({ child }, i) => {
      child.on('message', (msg: ChildMessage) => {
        if (msg.type === 'ready' && ++readyCount === m.procs) resolve();
        if (msg.type === 'count') {
          counts[i] = msg.completed;
          if (!stopped && counts.reduce((a, b) => a + b, 0) >= base.n) {
            stopped = true;
            send({ type: 'stop' });
          }
        }
      });
    });
  });
  // The first child to fail fails the run: the others would wait for a go / stop forever.
  const firstFailure = new Promise<never>((_, reject) => {
    for (const c of children) c.result.catch(reject);
  });
  let ok: ChildResult[];
  try {
    await Promise.race([allReady, firstFailure]);
    send({ type: 'go' });
    ok = await Promise.race([Promise.all(children.map((c) => c.result)), firstFailure]);
  } catch (e) {
    for (const { child } of children) child.kill('SIGKILL');
    await Promise.allSettled(children.map((c) => c.result));
    throw e;
  }
  const jobs = ok.reduce((a, r) => a + (r.jobs ?? 0), 0);
  const startAt = Math.min(...ok.map((r) => r.startAt ?? NaN));
  const lastAt = Math.max(...ok.map((r) => r.lastAt ?? NaN));
  if (jobs < base.n) throw new Error(`only ${jobs} of ${base.n} jobs completed`);
  const seconds = (lastAt - startAt) / 1000;
  return {
    ok: true,
    lib,
    kind: 'process',
    value: jobs / seconds,
    jobs,
    seconds,
    startAt,
    lastAt,
    failedAttempts: ok.reduce((a, r) => a + (r.failedAttempts ?? 0), 0),
  };
}

// ------------------------------------------------------------------------------ results

type Better = 'higher' | 'lower';

interface Target {
  op: '>=' | '<=' | '<';
  x: number;
}

interface RowSpec {
  /** Stable id (JSON `id`; test/bench/smoke.ts checks every one is there). */
  id: string;
  figure: string;
  group: Group;
  unit: string;
  better: Better;
  measurement: string;
  pick: (r: ChildResult) => number | undefined;
  digits: number;
  target?: Target;
}

function rowSpecs(s: Settings): RowSpec[] {
  const c = s.concurrency;
  const jobsPerSec = (r: ChildResult) => r.value;
  const tp = (
    id: string,
    group: Group,
    figure: string,
    measurement: string,
    target?: Target,
  ): RowSpec => ({
    id,
    figure,
    group,
    unit: 'jobs/s',
    better: 'higher',
    measurement,
    pick: jobsPerSec,
    digits: 0,
    target,
  });
  const specs: RowSpec[] = [
    tp('add', 'add', 'add, one at a time', 'add', { op: '>=', x: 1.5 }),
    tp('addBulk', 'addBulk', `addBulk (${s.bulkSize} per call)`, 'addBulk', { op: '>=', x: 3 }),
    tp('c1', 'c1', 'process, c=1', 'c1', { op: '>=', x: 1.8 }),
    tp('c50', 'c50', `process, c=${c}`, 'c50', { op: '>=', x: 2.5 }),
    {
      id: 'latencyP50',
      figure: 'idle latency add→handler, p50',
      group: 'latency',
      unit: 'µs',
      better: 'lower',
      measurement: 'latency',
      pick: (r) => r.p50Us,
      digits: 0,
      target: { op: '<=', x: 0.5 },
    },
    {
      id: 'latencyP99',
      figure: 'idle latency add→handler, p99',
      group: 'latency',
      unit: 'µs',
      better: 'lower',
      measurement: 'latency',
      pick: (r) => r.p99Us,
      digits: 0,
    },
    {
      id: 'bytes',
      figure: `Redis bytes per waiting job (${s.bytesN} × {"i":n})`,
      group: 'bytes',
      unit: 'B',
      better: 'lower',
      measurement: 'bytes',
      pick: (r) => r.value,
      digits: 1,
      target: { op: '<=', x: 0.33 },
    },
    {
      id: 'commands',
      figure: `Redis commands per completed job, incl. inside Lua (c=${c})`,
      group: 'commands',
      unit: 'calls',
      better: 'lower',
      measurement: 'c50',
      pick: (r) => r.commandsPerJob,
      digits: 2,
      target: { op: '<', x: 1 },
    },
    {
      id: 'reads',
      figure: `Redis socket reads per completed job, ≈ round trips (c=${c})`,
      group: 'commands',
      unit: 'reads',
      better: 'lower',
      measurement: 'c50',
      pick: (r) => r.readsPerJob,
      digits: 3,
    },
    tp('aof', 'aof', `process, c=${c}, AOF appendfsync everysec`, 'aof'),
    tp('scale1', 'scaling', `scaling: 1 worker process × c=${c} (= process c=${c})`, 'c50'),
    tp('scale2', 'scaling', `scaling: 2 worker processes × c=${c}`, 'scale2'),
    tp('scale4', 'scaling', `scaling: 4 worker processes × c=${c}`, 'scale4'),
    tp('payload100', 'payload', `process, c=${c}, 100 B payload`, 'payload100'),
    tp('payload10k', 'payload', `process, c=${c}, 10 KB payload`, 'payload10k'),
    tp('mixed', 'mixed', `mixed: 10% fail once + retry, c=${c} (successes/s)`, 'mixed'),
  ];
  return specs.filter((r) => s.only.includes(r.group));
}

interface Stat {
  median: number;
  min: number;
  max: number;
  values: number[];
}

interface Row {
  id: string;
  figure: string;
  unit: string;
  better: Better;
  ours: number | null;
  bullmq: number | null;
  beeQueue: number | null;
  /** ours / BullMQ (medians), whatever the direction: see `better`. */
  ratio: number | null;
  target: string | null;
  met: boolean | null;
  range: Record<'ours' | 'bullmq' | 'beeQueue', [number, number] | null>;
  samples: Record<'ours' | 'bullmq' | 'beeQueue', number[]>;
}

const targetText = (t: Target) => `${t.op === '>=' ? '≥' : t.op === '<=' ? '≤' : '<'} ${t.x}×`;

function buildRows(specs: RowSpec[], results: Map<string, ChildResult[]>): Row[] {
  return specs.map((spec) => {
    const stat = (lib: LibName): Stat | null => {
      const values = (results.get(`${spec.measurement}/${lib}`) ?? [])
        .map(spec.pick)
        .filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
      if (values.length === 0) return null;
      return { median: median(values), min: Math.min(...values), max: Math.max(...values), values };
    };
    const stats = { ours: stat('ours'), bullmq: stat('bullmq'), beeQueue: stat('bee') };
    const ratio =
      stats.ours && stats.bullmq && stats.bullmq.median !== 0
        ? stats.ours.median / stats.bullmq.median
        : null;
    const t = spec.target;
    const met =
      t && ratio !== null
        ? t.op === '>='
          ? ratio >= t.x
          : t.op === '<='
            ? ratio <= t.x
            : ratio < t.x
        : null;
    const pick = (k: keyof typeof stats) => stats[k]?.median ?? null;
    const range = (k: keyof typeof stats): [number, number] | null =>
      stats[k] ? [stats[k].min, stats[k].max] : null;
    return {
      id: spec.id,
      figure: spec.figure,
      unit: spec.unit,
      better: spec.better,
      ours: pick('ours'),
      bullmq: pick('bullmq'),
      beeQueue: pick('beeQueue'),
      ratio,
      target: t ? targetText(t) : null,
      met,
      range: { ours: range('ours'), bullmq: range('bullmq'), beeQueue: range('beeQueue') },
      samples: {
        ours: stats.ours?.values ?? [],
        bullmq: stats.bullmq?.values ?? [],
        beeQueue: stats.beeQueue?.values ?? [],
      },
    };
  });
}

function fmt(v: number, digits: number): string {
  return v.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

function renderTable(specs: RowSpec[], rows: Row[], s: Settings): string {
  const cell = (row: Row, spec: RowSpec, k: 'ours' | 'bullmq' | 'beeQueue', lib: LibName) => {
    if (!s.libs.includes(lib)) return '—';
    const v = row[k];
    if (v === null) return 'FAILED';
    const r = row.range[k];
    const d = spec.digits;
    return r && s.reps > 1 ? `${fmt(v, d)} (${fmt(r[0], d)}–${fmt(r[1], d)})` : fmt(v, d);
  };
  const header = ['figure', 'ours', 'BullMQ', 'Bee-Queue', 'ours/BullMQ', 'target', 'met?'];
  const lines = rows.map((row, i) => {
    const spec = specs[i]!;
    return [
      `${row.figure} [${row.unit}, ${row.better === 'higher' ? '↑ higher' : '↓ lower'} is better]`,
      cell(row, spec, 'ours', 'ours'),
      cell(row, spec, 'bullmq', 'bullmq'),
      cell(row, spec, 'beeQueue', 'bee'),
      row.ratio === null ? '—' : `${fmt(row.ratio, 2)}×`,
      row.target ?? '—',
      row.met === null ? '—' : row.met ? 'yes' : 'NO',
    ];
  });
  const widths = header.map((h, c) => Math.max(h.length, ...lines.map((l) => l[c]!.length)));
  const line = (cells: string[]) =>
    cells.map((x, c) => (c === 0 ? x.padEnd(widths[c]!) : x.padStart(widths[c]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(line)].join('\n');
}

// ------------------------------------------------------------------------------ main

async function flush(client: Redis): Promise<void> {
  await client.call('FLUSHALL', 'SYNC');
  await client.call('SCRIPT', 'FLUSH', 'SYNC');
}

function summarize(r: ChildResult): string {
  switch (r.kind) {
    case 'latency':
      return `p50 ${fmt(r.p50Us ?? NaN, 0)} µs, p99 ${fmt(r.p99Us ?? NaN, 0)} µs`;
    case 'bytes':
      return `${fmt(r.value, 1)} B/job`;
    default: {
      const extra =
        r.commandsPerJob !== undefined
          ? `, ${fmt(r.commandsPerJob, 2)} cmds/job, ${fmt(r.readsPerJob ?? NaN, 3)} reads/job`
          : '';
      const failed = r.failedAttempts ? `, ${r.failedAttempts} failed attempts` : '';
      const first = r.firstJobMs !== undefined ? `, 1st job after ${fmt(r.firstJobMs, 0)} ms` : '';
      return `${fmt(r.value, 0)} jobs/s (${fmt(r.seconds ?? NaN, 2)} s${first}${extra}${failed})`;
    }
  }
}

async function main(): Promise<number> {
  const s = parseSettings(process.argv.slice(2));
  const started = Date.now();
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const measurements = plan(s);
  const specs = rowSpecs(s);

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
        latencySamples: s.samples,
        latencySpacingMs: s.spacingMs,
        bytesN: s.bytesN,
        bulkSize: s.bulkSize,
        libs: s.libs,
        only: s.only,
      },
      libraries: Object.fromEntries(descriptions.map((d) => [d.lib, d])),
    };

    const results = new Map<string, ChildResult[]>();
    let failures = 0;
    const total = s.reps * measurements.length * s.libs.length;
    let done = 0;
    for (let rep = 0; rep < s.reps; rep++) {
      const order = s.libs.map((_, i) => s.libs[(i + rep) % s.libs.length]!);
      for (const m of measurements) {
        for (const lib of order) {
          done += 1;
          const { handle, client } = servers.get(m.server)!;
          await flush(client);
          const params: ChildParams = {
            ...m.params,
            host: handle.host,
            port: handle.port,
            procs: m.procs,
            index: 0,
            timeoutMs: s.timeoutMs,
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

    const rows = buildRows(specs, results);
    const out: string[] = [];
    out.push(`nestjs-work-queue benchmark — ${env.date}`);
    out.push(
      `node ${env.node}, redis ${env.redis} (${env.redisPersistence}), ${env.cpu}, ${env.cores} cores, ${env.platform}, load ${env.loadAverageAtStart.join(' ')}`,
    );
    out.push(
      `n=${s.n} (c=1: ${Math.ceil(s.n / 2)}), concurrency ${s.concurrency}, ${s.reps} repetition(s)${s.quick ? ' [--quick: indicative only]' : ''}, warm-up ${s.warmup} jobs per child, latency ${s.samples} samples ${s.spacingMs} ms apart, addBulk ${s.bulkSize} per call`,
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
      'Cells: median (min–max) over repetitions. ours/BullMQ is the ratio of medians, for every row; the arrow says which direction is better.',
    );
    out.push('');
    out.push(renderTable(specs, rows, s));
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
