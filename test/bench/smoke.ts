/**
 * Smoke test of the benchmark harness (`npm run test:bench-smoke`, called from CI): runs
 * test/bench/run.ts with tiny numbers and fails when any row is missing or any value is not a
 * finite number. Asserts nothing about speed. Extra arguments are passed on to run.ts.
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
  '--json',
];

interface Row {
  id?: unknown;
  ours?: unknown;
  bullmq?: unknown;
  beeQueue?: unknown;
  ratio?: unknown;
}

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
  let libs = ['ours', 'bullmq', 'bee'];
  try {
    const result = JSON.parse(last) as { rows: Row[]; env?: { settings?: { libs?: string[] } } };
    rows = result.rows;
    libs = result.env?.settings?.libs ?? libs;
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
    const keys: Array<keyof Row> = [];
    if (libs.includes('ours')) keys.push('ours');
    if (libs.includes('bullmq')) keys.push('bullmq');
    if (libs.includes('bee')) keys.push('beeQueue');
    if (libs.includes('ours') && libs.includes('bullmq')) keys.push('ratio');
    for (const k of keys) {
      if (!finite(row[k])) problems.push(`row ${id}: ${k} is ${JSON.stringify(row[k])}`);
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
