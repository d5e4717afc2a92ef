/** The command line of test/bench/run.ts (documented in its header comment: --help). */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { LIBS, type LibName } from './libs/types.js';

/** --help: the header comment of run.ts. */
function helpText(): string {
  const lines = readFileSync(new URL('./run.ts', import.meta.url), 'utf8').split('\n');
  const end = lines.findIndex((l) => l.startsWith(' */'));
  return lines
    .slice(1, end)
    .map((l) => l.replace(/^ \* ?/, ''))
    .join('\n');
}

// ------------------------------------------------------------------------------------ flags

export const GROUPS = [
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
  'addConcurrent',
  'firstJob',
  'memory',
  'scale',
  'keep',
  'sandbox',
  'groups',
  'fairness',
  'flows',
] as const;
export type Group = (typeof GROUPS)[number];

const LIB_ALIASES: Record<string, LibName | undefined> = {
  ours: 'ours',
  bullmq: 'bullmq',
  bee: 'bee',
  'bee-queue': 'bee',
  beequeue: 'bee',
  bare: 'bare',
  'bare-list': 'bare',
  fused: 'fused',
  'fused-lua': 'fused',
};

/** Figures run unless asked for by --only or a flag (slow). */
const OPT_IN: readonly Group[] = ['scale'];

export interface Settings {
  quick: boolean;
  n: number;
  concurrency: number;
  libs: LibName[];
  only: Group[];
  reps: number;
  aof: boolean;
  json: boolean;
  warmup: number;
  warmupMs: number;
  samples: number;
  spacingMs: number;
  bytesN: number;
  bulkSize: number;
  timeoutMs: number;
  cpuProf: boolean;
  callers: number;
  firstSamples: number;
  memWorkers: number[];
  scaleN: number;
  scaleBase: number;
}

export function parseSettings(argv: string[]): Settings {
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
      'warmup-ms': { type: 'string' },
      samples: { type: 'string' },
      spacing: { type: 'string' },
      'bytes-n': { type: 'string' },
      'bulk-size': { type: 'string' },
      timeout: { type: 'string' },
      'cpu-prof': { type: 'boolean' },
      callers: { type: 'string' },
      'first-samples': { type: 'string' },
      'mem-workers': { type: 'string' },
      scale: { type: 'boolean' },
      'scale-n': { type: 'string' },
      'scale-base': { type: 'string' },
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
      if (!lib)
        throw new Error(`--libs: unknown library ${JSON.stringify(s)} (${LIBS.join(', ')})`);
      return lib;
    });
  const defaultOnly = GROUPS.filter((g) => !OPT_IN.includes(g) || (g === 'scale' && values.scale));
  const only = (values.only ?? defaultOnly.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const g = GROUPS.find((x) => x.toLowerCase() === s.toLowerCase());
      if (!g) throw new Error(`--only: unknown figure ${JSON.stringify(s)} (${GROUPS.join(', ')})`);
      return g;
    });
  if (libs.length === 0 || only.length === 0) throw new Error('--libs and --only need a value');
  if (values.scale && values.only && !only.includes('scale')) only.push('scale');
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
    warmupMs: int('warmup-ms', values['warmup-ms'], quick ? 0 : 1000, 0),
    samples: int('samples', values.samples, quick ? 50 : 500),
    spacingMs: int('spacing', values.spacing, 5, 0),
    bytesN: int('bytes-n', values['bytes-n'], quick ? 5000 : 20_000),
    bulkSize: int('bulk-size', values['bulk-size'], 1000),
    timeoutMs: int('timeout', values.timeout, Math.round(60 + n / 500)) * 1000,
    cpuProf: values['cpu-prof'] ?? false,
    callers: int('callers', values.callers, 64),
    firstSamples: int('first-samples', values['first-samples'], quick ? 3 : 7),
    memWorkers: (values['mem-workers'] ?? '1,10,30')
      .split(',')
      .map((w) => int('mem-workers', w.trim(), 1)),
    scaleN: int('scale-n', values['scale-n'], 1_000_000),
    scaleBase: int('scale-base', values['scale-base'], 20_000),
  };
}
