/**
 * Rows "groups" (ours only) and "fairness" (ours and BullMQ), issue 27:
 * - groups: one worker at c=50 over `n` jobs, first ungrouped, then spread round robin over
 *   `groups` (1 000) groups, then (the reference for what metadata alone costs) ungrouped with a
 *   name each, in the same child (same Redis, same JIT state): jobs/s of each, grouped over
 *   ungrouped, and Redis bytes per waiting grouped job (used_memory over the grouped fill).
 * - fairness: group A has 20 000 waiting jobs and one worker at c=5 (ours: prefetch 0, so a
 *   handler's start is its lease) runs them; once 200 have started, group B adds 10. The figure:
 *   how many of A's jobs started after B's add and before B's last job started (BullMQ has no
 *   groups: B waits behind A's backlog).
 */
import { Redis } from 'ioredis';
import { completionCounter, onError, payloads, QUEUE } from '../jobs.js';
import type { Adapter, JobData } from '../libs/types.js';
import type { ChildParams, ChildResult } from '../protocol.js';
import type { Settings } from '../options.js';
import { baseParams, type RowPlan } from '../row.js';
import { info, sleep, wallMs } from '../util.js';

const DEFAULT_GROUPS = 1_000;
const FAIR_BACKLOG = 20_000;
const FAIR_LATE = 10;
/** B's jobs carry i >= this (A's are below). */
const LATE_FROM = 1_000_000;

/** One worker at `p.concurrency` over `count` waiting jobs: jobs/s, first handler call to last completion. */
async function run(
  adapter: Adapter,
  p: ChildParams,
  queue: string,
  count: number,
): Promise<number> {
  const c = completionCounter(count);
  let firstAt = 0;
  const consumer = await adapter.consumer(queue, {
    concurrency: p.concurrency,
    handler: () => {
      if (firstAt === 0) firstAt = wallMs();
    },
    onCompleted: c.onCompleted,
    onError,
  });
  await c.done;
  await consumer.close();
  return count / ((c.lastAt - firstAt) / 1000);
}

async function fill(
  adapter: Adapter,
  p: ChildParams,
  queue: string,
  count: number,
  groupOf?: (d: JobData) => string,
  named = false,
): Promise<void> {
  const producer = await adapter.producer(queue);
  await producer.ready();
  const make = payloads(p.payloadBytes);
  for (let from = 0; from < count; from += p.bulkSize) {
    const batch: JobData[] = [];
    for (let i = from; i < Math.min(count, from + p.bulkSize); i++) batch.push(make(i));
    await producer.addBulk(batch, groupOf, named);
  }
  await producer.close();
}

export async function measureGroups(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const groups = p.groups ?? DEFAULT_GROUPS;
  const groupOf = (d: JobData) => `tenant-${d.i % groups}`;
  const stats = new Redis({ host: p.host, port: p.port });
  try {
    const warm = Math.max(1, p.warmup);
    await fill(adapter, p, `${QUEUE}-warm-u`, warm);
    await run(adapter, p, `${QUEUE}-warm-u`, warm);
    await fill(adapter, p, `${QUEUE}-warm-g`, warm, groupOf);
    await run(adapter, p, `${QUEUE}-warm-g`, warm);

    await fill(adapter, p, `${QUEUE}-u`, p.n);
    const ungrouped = await run(adapter, p, `${QUEUE}-u`, p.n);
    const memory = async () => {
      await sleep(250); // let Redis shrink client buffers in its cron
      return Number((await info(stats, 'memory')).get('used_memory'));
    };
    const before = await memory();
    await fill(adapter, p, `${QUEUE}-g`, p.n, groupOf);
    const after = await memory();
    const grouped = await run(adapter, p, `${QUEUE}-g`, p.n);
    await fill(adapter, p, `${QUEUE}-n`, p.n, groupOf, true);
    const named = await run(adapter, p, `${QUEUE}-n`, p.n);
    return {
      ok: true,
      lib: adapter.lib,
      kind: 'groups',
      value: grouped,
      jobs: p.n,
      ungroupedPerSec: ungrouped,
      groupedPerSec: grouped,
      groupedRatio: grouped / ungrouped,
      namedPerSec: named,
      groupedBytesPerJob: (after - before) / p.n,
    };
  } finally {
    stats.disconnect();
  }
}

export async function measureFairness(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const a = (d: JobData) => (d.i >= LATE_FROM ? 'B' : 'A');
  await fill(adapter, p, QUEUE, FAIR_BACKLOG, a);
  const started: number[] = [];
  let late = 0;
  let allLate!: () => void;
  const lateDone = new Promise<void>((r) => (allLate = r));
  let warmed!: () => void;
  const warm = new Promise<void>((r) => (warmed = r));
  // Prefetch 0: a handler's start is its lease (the others take a job only for a free slot).
  const consumer = await adapter.consumer(QUEUE, {
    concurrency: 5,
    prefetch: 0,
    handler: (d) => {
      started.push(d.i);
      if (started.length === 200) warmed();
      if (d.i >= LATE_FROM && ++late === FAIR_LATE) allLate();
    },
    onCompleted: () => undefined,
    onError,
  });
  await warm;
  const producer = await adapter.producer(QUEUE);
  await producer.ready();
  const before = started.length;
  const batch = Array.from({ length: FAIR_LATE }, (_, k) => ({ i: LATE_FROM + k }));
  await producer.addBulk(batch, a);
  await lateDone;
  let lastLate = started.length - 1;
  while (started[lastLate]! < LATE_FROM) lastLate--;
  const ahead = started.slice(before, lastLate).filter((i) => i < LATE_FROM).length;
  await producer.close();
  await consumer.close();
  return { ok: true, lib: adapter.lib, kind: 'fairness', value: ahead, jobs: started.length };
}

export function groupsPlan(s: Settings): RowPlan {
  const groups = DEFAULT_GROUPS;
  const c = s.concurrency;
  return {
    measurements: [
      {
        id: 'groups',
        kind: 'groups',
        procs: 1,
        server: 'main',
        params: { ...baseParams(s), groups },
        libs: ['ours'],
        timeoutMs: Math.max(s.timeoutMs, 120_000),
      },
      {
        id: 'fairness',
        kind: 'fairness',
        procs: 1,
        server: 'main',
        params: baseParams(s),
        libs: ['ours', 'bullmq'],
        timeoutMs: Math.max(s.timeoutMs, 120_000),
      },
    ],
    rows: [
      {
        id: 'groupsUngrouped',
        figure: `groups: process, c=${c}, ungrouped (the run of the next row)`,
        group: 'groups',
        unit: 'jobs/s',
        better: 'higher',
        measurement: 'groups',
        pick: (r) => r.ungroupedPerSec,
        digits: 0,
        libs: ['ours'],
      },
      {
        id: 'groupsGrouped',
        figure: `groups: process, c=${c}, jobs over ${groups.toLocaleString('en-US')} groups`,
        group: 'groups',
        unit: 'jobs/s',
        better: 'higher',
        measurement: 'groups',
        pick: (r) => r.groupedPerSec,
        digits: 0,
        libs: ['ours'],
      },
      {
        id: 'groupsNamed',
        figure: `groups: process, c=${c}, ungrouped with a name each (metadata, no group; same run)`,
        group: 'groups',
        unit: 'jobs/s',
        better: 'higher',
        measurement: 'groups',
        pick: (r) => r.namedPerSec,
        digits: 0,
        libs: ['ours'],
      },
      {
        id: 'groupsRatio',
        figure: `groups: grouped / ungrouped, c=${c} (same run; issue 27 asks >= 0.8)`,
        group: 'groups',
        unit: '×',
        better: 'higher',
        measurement: 'groups',
        pick: (r) => r.groupedRatio,
        digits: 2,
        libs: ['ours'],
      },
      {
        id: 'groupsBytes',
        figure: `groups: Redis bytes per waiting grouped job (n over ${groups.toLocaleString('en-US')} groups)`,
        group: 'groups',
        unit: 'B',
        better: 'lower',
        measurement: 'groups',
        pick: (r) => r.groupedBytesPerJob,
        digits: 1,
        libs: ['ours'],
      },
      {
        id: 'fairness',
        figure: `fairness: A's jobs started before B's ${FAIR_LATE} (added behind A's ${FAIR_BACKLOG.toLocaleString('en-US')}; c=5, no prefetch)`,
        group: 'fairness',
        unit: 'jobs',
        better: 'lower',
        measurement: 'fairness',
        pick: (r) => r.value,
        digits: 0,
        libs: ['ours', 'bullmq'],
      },
    ],
  };
}
