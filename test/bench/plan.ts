/**
 * What run.ts measures (one Measurement: a child per library and repetition) and which rows
 * it reports from them (RowSpec). The original figures are here; each newer row has its own
 * file under rows/ (child side and plan side together) and is merged in by `plan()`.
 */
import type { LibName } from './libs/types.js';
import type { Group, Settings } from './options.js';
import type { ChildResult } from './protocol.js';
import { concurrentAddPlan } from './rows/concurrent-add.js';
import { firstJobPlan } from './rows/first-job.js';
import { keepCompletedPlan } from './rows/keep-completed.js';
import { flowsPlan } from './rows/flows.js';
import { memoryPlan } from './rows/memory.js';
import { sandboxPlan } from './rows/sandbox.js';
import { scalePlan } from './rows/scale.js';
import { groupsPlan } from './rows/groups.js';
import { baseParams, type Measurement, type RowSpec, type Target } from './row.js';

/** Libraries that can take part in a failing-and-retrying workload (not the floors). */
const RETRYING: readonly LibName[] = ['ours', 'bullmq', 'bee'];

export function plan(s: Settings): { measurements: Measurement[]; specs: RowSpec[] } {
  const parts = [
    { measurements: measurements(s), rows: rowSpecs(s) },
    concurrentAddPlan(s),
    firstJobPlan(s),
    memoryPlan(s),
    scalePlan(s),
    keepCompletedPlan(s),
    sandboxPlan(s),
    groupsPlan(s),
    flowsPlan(s),
  ];
  const wanted = (g: Group) => s.only.includes(g);
  const specs = parts.flatMap((p) => p.rows).filter((r) => wanted(r.group));
  const ids = new Set(specs.map((r) => r.measurement));
  return {
    measurements: parts.flatMap((p) => p.measurements).filter((m) => ids.has(m.id)),
    specs,
  };
}

function measurements(s: Settings): Measurement[] {
  const base = baseParams(s);
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
    mixed: { ...proc('mixed', { failEvery: 10 }), libs: RETRYING },
  };
  return Object.values(all);
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
  return [
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
    {
      ...tp('mixed', 'mixed', `mixed: 10% fail once + retry, c=${c} (successes/s)`, 'mixed'),
      libs: RETRYING,
    },
  ];
}
