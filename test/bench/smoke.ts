/**
 * Smoke test of the benchmark harness (`npm run test:bench-smoke`, called from CI): runs
 * test/bench/run.ts with tiny numbers (every figure, the floors and --scale included) and
 * fails when any row is missing or any value is not a finite number. Asserts nothing about
 * speed. Extra arguments are passed on to run.ts.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Every row run.ts reports when all figures run. */
const ROW_IDS = [
  'add',
  'addBulk',
  'c1',
  'c50',
  'latencyP50',
  'latencyP99',
  'bytes',
  'commands',
  'reads',
  'aof',
  'scale1',
  'scale2',
  'scale4',
  'payload100',
  'payload10k',
  'mixed',
  'addConcurrent',
  'firstJobMs',
  'memRss1',
  'memRss2',
  'memStart1',
  'memStart2',
  'scaleAddBase',
  'scaleAddBig',
  'scaleTakeBase',
  'scaleTakeBig',
  'scaleBytesBase',
  'scaleBytesBig',
  'c50Keep',
  'sandboxInProcess',
  'sandboxThread',
  'sandboxProcess',
  'sandboxThreadStartMs',
  'sandboxProcessStartMs',
  'groupsUngrouped',
  'groupsGrouped',
  'groupsNamed',
  'groupsRatio',
  'groupsBytes',
  'fairness',
  'flows',
];
const ARGS = [
  '--quick',
  '--n',
  '300',
  '--reps',
  '1',
  '--warmup',
  '100',
  '--samples',
  '30',
  '--bytes-n',
  '2000',
  '--first-samples',
  '1',
  '--mem-workers',
  '1,2',
  '--scale',
  '--scale-n',
  '2000',
  '--scale-base',
  '500',
  '--json',
];

type Row = Partial<Record<string, unknown>> & { id?: unknown; libs?: unknown };

/** Row key of each library, and the ratio field of ours over it. */
const KEYS: Record<string, { value: string; ratio?: string }> = {
  ours: { value: 'ours' },
  bullmq: { value: 'bullmq', ratio: 'ratio' },
  bee: { value: 'beeQueue', ratio: 'ratioBee' },
  bare: { value: 'bare', ratio: 'ratioBare' },
  fused: { value: 'fused', ratio: 'ratioFused' },
};

const started = Date.now();
const child = spawn(
  process.execPath,
  ['--import', './scripts/register-ts.mjs', 'test/bench/run.ts', ...ARGS, ...process.argv.slice(2)],
  { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
);
let out = '';
child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
child.on('close', (code) => {
  const lines = out.trimEnd().split('\n');
  const last = lines.pop() ?? '';
  process.stdout.write(`${lines.join('\n')}\n`);
  const problems: string[] = [];
  if (code !== 0) problems.push(`run.ts exited with code ${code}`);
  let rows: Row[] = [];
  try {
    const result = JSON.parse(last) as { rows: Row[] };
    rows = result.rows;
    if (!Array.isArray(rows)) throw new Error('no rows array');
  } catch (e) {
    problems.push(`the last stdout line is not the JSON result: ${String(e)}`);
  }
  const finite = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
  for (const id of ROW_IDS) {
    const row = rows.find((r) => r.id === id);
    if (!row) {
      problems.push(`row ${id} is missing`);
      continue;
    }
    const libs = Array.isArray(row.libs) ? (row.libs as string[]) : [];
    if (libs.length === 0) problems.push(`row ${id}: no libraries measured`);
    for (const lib of libs) {
      const k = KEYS[lib];
      if (!k) {
        problems.push(`row ${id}: unknown library ${lib}`);
        continue;
      }
      const v = row[k.value];
      if (!finite(v)) problems.push(`row ${id}: ${k.value} is ${JSON.stringify(v)}`);
      // A ratio exists whenever both medians do (and the other one is not 0).
      if (k.ratio && finite(row.ours) && finite(v) && v !== 0 && !finite(row[k.ratio])) {
        problems.push(`row ${id}: ${k.ratio} is ${JSON.stringify(row[k.ratio])}`);
      }
    }
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (problems.length > 0) {
    process.stderr.write(`bench smoke FAILED (${seconds} s):\n  - ${problems.join('\n  - ')}\n`);
    process.exit(1);
  }
  process.stderr.write(`bench smoke OK: ${ROW_IDS.length} rows, all finite (${seconds} s)\n`);
  process.exit(0);
});
