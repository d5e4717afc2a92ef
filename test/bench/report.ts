/**
 * Results → rows (medians, ranges, ratios) → the printed tables. Two tables: the values of
 * every library side by side, then ours as a ratio of each of the others (BullMQ with the
 * targets, Bee-Queue, and the two floors: "fraction of the floor").
 */
import { LIB_LABELS, LIBS, ROW_KEYS, type LibName, type RowKey } from './libs/types.js';
import type { Settings } from './options.js';
import type { Better, RowSpec, Target } from './row.js';
import type { ChildResult } from './protocol.js';
import { median } from './util.js';

type PerLib<T> = Record<RowKey, T>;

/** One row of the result (also the JSON row). */
export interface Row extends PerLib<number | null> {
  id: string;
  figure: string;
  unit: string;
  better: Better;
  /** The libraries measured for this row (those asked for, less any the row leaves out). */
  libs: LibName[];
  /** ours / BullMQ (medians), whatever the direction: see `better`. */
  ratio: number | null;
  /** ours / Bee-Queue, ours / bare list, ours / fused Lua list (medians). */
  ratioBee: number | null;
  ratioBare: number | null;
  ratioFused: number | null;
  target: string | null;
  met: boolean | null;
  range: PerLib<[number, number] | null>;
  samples: PerLib<number[]>;
}

const targetText = (t: Target) => `${t.op === '>=' ? '≥' : t.op === '<=' ? '≤' : '<'} ${t.x}×`;

const meets = (t: Target, ratio: number) =>
  t.op === '>=' ? ratio >= t.x : t.op === '<=' ? ratio <= t.x : ratio < t.x;

export function buildRows(
  specs: RowSpec[],
  results: Map<string, ChildResult[]>,
  s: Settings,
): Row[] {
  return specs.map((spec) => {
    const libs = s.libs.filter((l) => !spec.libs || spec.libs.includes(l));
    const values = (lib: LibName) =>
      (results.get(`${spec.measurement}/${lib}`) ?? [])
        .map(spec.pick)
        .filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    const med = {} as PerLib<number | null>;
    const range = {} as PerLib<[number, number] | null>;
    const samples = {} as PerLib<number[]>;
    for (const lib of LIBS) {
      const k = ROW_KEYS[lib];
      const v = values(lib);
      med[k] = v.length ? median(v) : null;
      range[k] = v.length ? [Math.min(...v), Math.max(...v)] : null;
      samples[k] = v;
    }
    const over = (k: RowKey) => {
      const other = med[k];
      return med.ours !== null && other !== null && other !== 0 ? med.ours / other : null;
    };
    const ratio = over('bullmq');
    const t = spec.target;
    return {
      id: spec.id,
      figure: spec.figure,
      unit: spec.unit,
      better: spec.better,
      libs,
      ...med,
      ratio,
      ratioBee: over('beeQueue'),
      ratioBare: over('bare'),
      ratioFused: over('fused'),
      target: t ? targetText(t) : null,
      met: t && ratio !== null ? meets(t, ratio) : null,
      range,
      samples,
    };
  });
}

export function fmt(v: number, digits: number): string {
  return v.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

function table(header: string[], lines: string[][]): string {
  const widths = header.map((h, c) => Math.max(h.length, ...lines.map((l) => l[c]!.length)));
  const line = (cells: string[]) =>
    cells.map((x, c) => (c === 0 ? x.padEnd(widths[c]!) : x.padStart(widths[c]!))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(line)].join('\n');
}

const label = (row: Row) =>
  `${row.figure} [${row.unit}, ${row.better === 'higher' ? '↑ higher' : '↓ lower'} is better]`;

/** Table 1: the medians (min–max with several repetitions) of every library. */
export function renderValues(specs: RowSpec[], rows: Row[], s: Settings): string {
  const cell = (row: Row, spec: RowSpec, lib: LibName) => {
    if (!row.libs.includes(lib)) return '—';
    const k = ROW_KEYS[lib];
    const v = row[k];
    if (v === null) return 'FAILED';
    const r = row.range[k];
    const d = spec.digits;
    return r && s.reps > 1 ? `${fmt(v, d)} (${fmt(r[0], d)}–${fmt(r[1], d)})` : fmt(v, d);
  };
  const header = ['figure', ...LIBS.map((l) => LIB_LABELS[l])];
  return table(
    header,
    rows.map((row, i) => [label(row), ...LIBS.map((l) => cell(row, specs[i]!, l))]),
  );
}

/** Table 2: ours over each of the others (ratio of medians), and the targets against BullMQ. */
export function renderRatios(rows: Row[]): string {
  const x = (v: number | null) => (v === null ? '—' : `${fmt(v, 2)}×`);
  const header = [
    'figure',
    'ours/BullMQ',
    'target',
    'met?',
    'ours/Bee-Queue',
    'ours/bare list',
    'ours/fused Lua',
  ];
  return table(
    header,
    rows.map((row) => [
      label(row),
      x(row.ratio),
      row.target ?? '—',
      row.met === null ? '—' : row.met ? 'yes' : 'NO',
      x(row.ratioBee),
      x(row.ratioBare),
      x(row.ratioFused),
    ]),
  );
}

/** One line of progress per child result (stderr). */
export function summarize(r: ChildResult): string {
  switch (r.kind) {
    case 'latency':
      return `p50 ${fmt(r.p50Us ?? NaN, 0)} µs, p99 ${fmt(r.p99Us ?? NaN, 0)} µs`;
    case 'bytes':
      return `${fmt(r.value, 1)} B/job`;
    case 'firstJob':
      return `median ${fmt(r.value, 1)} ms (${(r.samplesMs ?? []).map((v) => fmt(v, 0)).join(', ')})`;
    case 'memory':
      return `${r.jobs} workers: RSS +${fmt((r.rssDeltaBytes ?? NaN) / 2 ** 20, 1)} MB, heap +${fmt((r.heapDeltaBytes ?? NaN) / 2 ** 20, 1)} MB${r.gc ? ' (after GC)' : ' (no GC exposed)'}, all started in ${fmt(r.startMs ?? NaN, 0)} ms`;
    case 'sandbox': {
      const b = r.sandbox!;
      return `jobs/s in-process ${fmt(b.inProcessPerSec, 0)}, threads ${fmt(b.threadPerSec, 0)}, processes ${fmt(b.processPerSec, 0)}; pool start-up: threads ${fmt(b.threadStartMs, 0)} ms, processes ${fmt(b.processStartMs, 0)} ms`;
    }
    case 'fairness':
      return `${fmt(r.value, 0)} jobs of the big group started before the small group's last`;
    case 'scale':
      return `${r.jobs} jobs: add ${fmt(r.addPerSec ?? NaN, 0)} jobs/s, lease+complete ${fmt(r.drainPerSec ?? NaN, 0)} jobs/s, ${fmt(r.bytesPerJob ?? NaN, 1)} B/job`;
    default: {
      const extra =
        r.commandsPerJob !== undefined
          ? `, ${fmt(r.commandsPerJob, 2)} cmds/job, ${fmt(r.readsPerJob ?? NaN, 3)} reads/job`
          : '';
      const failed = r.failedAttempts ? `, ${r.failedAttempts} failed attempts` : '';
      const first = r.firstJobMs !== undefined ? `, 1st job after ${fmt(r.firstJobMs, 0)} ms` : '';
      // (A row measured as several runs, as groups is, has no one duration.)
      const took = r.seconds !== undefined ? `${fmt(r.seconds, 2)} s` : '';
      const detail = `${took}${first}${extra}${failed}`.replace(/^, /, '');
      return `${fmt(r.value, 0)} jobs/s${detail ? ` (${detail})` : ''}`;
    }
  }
}
