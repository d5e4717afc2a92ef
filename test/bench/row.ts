/** What a row of the bench is made of: its measurements and how a row is computed from them. */
import type { LibName } from './libs/types.js';
import type { Group, Settings } from './options.js';
import type { ChildKind, ChildParams, ChildResult } from './protocol.js';

export type ServerName = 'main' | 'aof';

export type BaseParams = Omit<ChildParams, 'host' | 'port' | 'index' | 'procs' | 'timeoutMs'>;

/** One measurement: one child (or `procs` coordinated children) per library and repetition. */
export interface Measurement {
  id: string;
  kind: ChildKind;
  procs: number;
  server: ServerName;
  params: BaseParams;
  /** Only these libraries (default: every one asked for). */
  libs?: readonly LibName[];
  /** Extra node flags for the child (e.g. --expose-gc). */
  nodeArgs?: string[];
  /** Per-child time limit, when longer than --timeout. */
  timeoutMs?: number;
}

/** A row file's share of the plan. */
export interface RowPlan {
  measurements: Measurement[];
  rows: RowSpec[];
}

export function baseParams(s: Settings): BaseParams {
  return {
    n: s.n,
    warmup: s.warmup,
    warmupMs: s.warmupMs,
    concurrency: s.concurrency,
    payloadBytes: 0,
    bulkSize: s.bulkSize,
    failEvery: 0,
    samples: 0,
    spacingMs: 0,
  };
}

export type Better = 'higher' | 'lower';

export interface Target {
  op: '>=' | '<=' | '<';
  x: number;
}

export interface RowSpec {
  /** Stable id (JSON `id`; test/bench/smoke.ts checks every one is there). */
  id: string;
  figure: string;
  group: Group;
  unit: string;
  better: Better;
  measurement: string;
  pick: (r: ChildResult) => number | undefined;
  digits: number;
  /** Ours / BullMQ target. */
  target?: Target;
  /** Only these libraries are measured for the row (default: every one asked for). */
  libs?: readonly LibName[];
}

/** A jobs/s row read from `ChildResult.value`. */
export function throughputRow(
  id: string,
  group: Group,
  figure: string,
  measurement: string,
  extra: Partial<RowSpec> = {},
): RowSpec {
  return {
    id,
    figure,
    group,
    unit: 'jobs/s',
    better: 'higher',
    measurement,
    pick: (r) => r.value,
    digits: 0,
    ...extra,
  };
}
