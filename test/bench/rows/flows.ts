/**
 * Row "flows" (issue 26): flows of one parent and 10 children per second, end to end — from the
 * first add until the last parent completed — ours (`FlowProducer`) against BullMQ's
 * `FlowProducer`, in the same run. The parents' queue and the children's are two queues; one
 * worker on each (concurrency `concurrency`); the flows are added in calls of 100 (`addBulk`)
 * while the workers run; each parent reads its children's results (ours
 * `job.getChildrenResults()`, BullMQ `job.getChildrenValues()`). `n / 11` flows, after `warmup
 * / 11` untimed ones.
 */
import { Redis } from 'ioredis';
import { QUEUE } from '../jobs.js';
import type { Adapter, LibName } from '../libs/types.js';
import type { ChildParams, ChildResult } from '../protocol.js';
import type { Settings } from '../options.js';
import { baseParams, throughputRow, type RowPlan } from '../row.js';

const KIDS = 10;
const CALL = 100;

/** A running flow setup of one library: add `count` flows (from `from`), wait for parents. */
interface FlowRig {
  add(from: number, count: number): Promise<void>;
  parentsDone(): number;
  close(): Promise<void>;
}

async function oursRig(p: ChildParams, tag: string): Promise<FlowRig> {
  const { FlowProducer, Worker, WorkQueue } = await import('../../../lib/index.js');
  const clients = [0, 1, 2].map(() => new Redis({ host: p.host, port: p.port }));
  const flows = new FlowProducer(clients[0]!);
  // (Completed jobs removed, as BullMQ's are: BULLMQ_WORKER_OPTIONS.)
  const kids = new WorkQueue<number>(clients[1]!, `${tag}-kids`, { keepCompleted: false });
  const parents = new WorkQueue<number>(clients[2]!, `${tag}-parents`, { keepCompleted: false });
  let done = 0;
  const kw = new Worker(kids, (job) => job.data, { concurrency: p.concurrency });
  const pw = new Worker(
    parents,
    async (job) => Object.keys(await job.getChildrenResults()).length,
    { concurrency: p.concurrency },
  );
  pw.on('completed', () => done++);
  await Promise.all([kw.start(), pw.start()]);
  return {
    async add(from, count) {
      const trees = Array.from({ length: count }, (_, i) => ({
        queue: parents.name,
        data: from + i,
        children: Array.from({ length: KIDS }, (_, j) => ({ queue: kids.name, data: j })),
      }));
      for (let i = 0; i < trees.length; i += CALL) await flows.addBulk(trees.slice(i, i + CALL));
    },
    parentsDone: () => done,
    async close() {
      await Promise.all([kw.close(), pw.close()]);
      await Promise.all(clients.map((c) => c.quit()));
    },
  };
}

async function bullmqRig(p: ChildParams, tag: string): Promise<FlowRig> {
  const { FlowProducer, Worker } = await import('bullmq');
  const { BULLMQ_WORKER_OPTIONS } = await import('../libs/settings.js');
  const connection = { host: p.host, port: p.port };
  const flows = new FlowProducer({ connection });
  let done = 0;
  const o = { connection, concurrency: p.concurrency, ...BULLMQ_WORKER_OPTIONS };
  const kw = new Worker<number>(`${tag}-kids`, async (job) => job.data, o);
  const pw = new Worker<number>(
    `${tag}-parents`,
    async (job) => Object.keys(await job.getChildrenValues()).length,
    o,
  );
  pw.on('completed', () => done++);
  for (const w of [kw, pw]) w.on('error', (e) => process.stderr.write(`[bullmq] ${String(e)}\n`));
  await Promise.all([kw.waitUntilReady(), pw.waitUntilReady()]);
  return {
    async add(from, count) {
      const trees = Array.from({ length: count }, (_, i) => ({
        name: 'p',
        queueName: `${tag}-parents`,
        data: from + i,
        children: Array.from({ length: KIDS }, (_, j) => ({
          name: 'c',
          queueName: `${tag}-kids`,
          data: j,
        })),
      }));
      for (let i = 0; i < trees.length; i += CALL) await flows.addBulk(trees.slice(i, i + CALL));
    },
    parentsDone: () => done,
    async close() {
      await Promise.all([kw.close(), pw.close()]);
      await flows.close();
    },
  };
}

async function until(ok: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error('flows: parents did not all complete in time');
    await new Promise((r) => setTimeout(r, 2));
  }
}

export async function measureFlows(adapter: Adapter, p: ChildParams): Promise<ChildResult> {
  const rigs: Partial<Record<LibName, typeof oursRig>> = { ours: oursRig, bullmq: bullmqRig };
  const make = rigs[adapter.lib];
  if (!make) throw new Error(`flows: not measured for ${adapter.lib}`);
  const rig = await make(p, `${QUEUE}-flows`);
  try {
    const warm = Math.max(1, Math.floor(p.warmup / (KIDS + 1)));
    const flows = Math.max(1, Math.floor(p.n / (KIDS + 1)));
    await rig.add(0, warm);
    await until(() => rig.parentsDone() >= warm, p.timeoutMs);
    const t0 = performance.now();
    await rig.add(warm, flows);
    await until(() => rig.parentsDone() >= warm + flows, p.timeoutMs);
    const seconds = (performance.now() - t0) / 1000;
    return {
      ok: true,
      lib: adapter.lib,
      kind: 'flows',
      value: flows / seconds,
      jobs: flows * (KIDS + 1),
      seconds,
    };
  } finally {
    await rig.close();
  }
}

export function flowsPlan(s: Settings): RowPlan {
  return {
    measurements: [
      {
        id: 'flows',
        kind: 'flows',
        procs: 1,
        server: 'main',
        params: baseParams(s),
        libs: ['ours', 'bullmq'],
      },
    ],
    rows: [
      throughputRow(
        'flows',
        'flows',
        `flows of 1 parent + ${KIDS} children, end to end (c=${s.concurrency} per queue)`,
        'flows',
        { unit: 'flows/s', libs: ['ours', 'bullmq'] },
      ),
    ],
  };
}
