/**
 * Issue 26's scenario `flows`: 300 flows of one parent and 10 children across two queues, added
 * while worker processes are SIGKILLed every 1–3 s, then Redis SIGKILLed and restarted (AOF
 * always). Every node is an acknowledged job for the suite's analysis (completed exactly once or
 * explained, none lost); and: every run of a parent saw all 10 children's results (it ran after
 * all its children: the handler logs what `job.getChildrenResults()` held, event 'W'), no child
 * completed after its parent ran, no parent is left waiting for children, no flow key is left.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { errorMessage, FlowProducer, WorkQueue, type FlowNode } from '../../../lib/index.js';
import { keysMatching } from '../../support/keys.js';
import type { JobRec } from '../records.js';
import { CONCURRENCY, leaseExpiryExplained, QUICK, RECONNECT_MS, scale } from '../common.js';
import type { Ctx, Scenario } from '../ctx.js';
import type { FaultJob } from '../handler.js';

type Base = Pick<
  Scenario,
  'queues' | 'worker' | 'cidShare' | 'bulkShare' | 'cancelShare' | 'drainTimeoutMs' | 'storeResults'
>;

const PARENTS = 'fl-orders';
const CHILDREN = 'fl-items';
const KIDS = 10;

export function flowScenarios(base: Base): Scenario[] {
  return [
    {
      ...base,
      id: 'flows',
      title: 'flows (1 parent + 10 children, two queues): kill -9 workers, then Redis kill -9',
      // The flows are added by inject (FlowProducer), not by the suite's producer.
      jobs: 0,
      rate: 1,
      queues: [PARENTS, CHILDREN],
      redis: { appendonly: true, appendfsync: 'always' },
      cidShare: 1,
      cancelShare: 0,
      queueOptions: {
        heartbeatTimeoutMs: 1_000,
        leaseMs: 10_000,
        backoff: { type: 'fixed', delayMs: 100 },
      },
      workerOptions: { concurrency: CONCURRENCY, idleTimeoutMs: 2_000 },
      behavior: () => ({ b: 'work', ms: 0 }),
      inject: runFlows,
      deadOk: leaseExpiryExplained(['kill9', 'redis-kill']),
      recovery: 'SIGKILL → re-run of each job it held',
      drainTimeoutMs: 90_000,
      finalChecks: checkFlows,
    },
  ];
}

/** Add the flows (paced) while killing workers; then kill Redis once; wait until all settle. */
async function runFlows(ctx: Ctx): Promise<void> {
  const flows = scale(300, 60);
  const client = new Redis(ctx.redis.url, { maxRetriesPerRequest: null });
  client.on('error', () => undefined);
  const producer = new FlowProducer(client, { prefix: 'fx', logger: false });
  let adding = true;
  const killer = (async () => {
    let kills = 0;
    while (adding || kills < 4) {
      await sleep(QUICK ? 500 + ctx.rand() * 1_000 : 1_000 + ctx.rand() * 2_000);
      const slot = ctx.readySlot();
      if (slot === undefined) continue;
      await ctx.kill9(slot);
      kills += 1;
    }
    ctx.note(`flows: ${kills} workers killed`);
  })();
  const t0 = Date.now();
  const adds: Promise<void>[] = [];
  for (let i = 0; i < flows; i++) {
    // 20 flows a second: the kills land while flows run.
    const wait = t0 + i * 50 - Date.now();
    if (wait > 0) await sleep(wait);
    adds.push(addFlow(ctx, producer, i));
  }
  await Promise.all(adds);
  adding = false;
  await killer;
  // The killed workers' leases are back first: a Redis outage makes heartbeats be judged again
  // from its end (a dead worker is then found a heartbeat timeout later, by design).
  await Promise.all(ctx.watchers);
  // Redis SIGKILLed while flows still run, restarted from its AOF.
  const at = Date.now();
  await ctx.redis.kill();
  ctx.redisKills.push(at);
  await sleep(ctx.rand() * 500);
  await ctx.redis.restart();
  const back = Date.now();
  ctx.faults.push({ kind: 'redis-kill', at, back, end: back + RECONNECT_MS });
  ctx.note(`flows: Redis killed ${at - t0} ms after the first add, down ${back - at} ms`);
  await settled(ctx, client);
  await client.quit().catch(() => client.disconnect());
}

async function addFlow(ctx: Ctx, producer: FlowProducer, i: number): Promise<void> {
  const node = (queue: string, k: string, kids?: number): FlowNode<FaultJob> => {
    const ms = 5 + Math.floor(ctx.rand() * 60);
    const data: FaultJob & { kids?: number } = { k, t: 1, b: 'work', ms };
    if (kids !== undefined) data.kids = kids;
    return { queue, id: k, data };
  };
  const children = Array.from({ length: KIDS }, (_, j) => node(CHILDREN, `c${i}-${j}`));
  const tree = { ...node(PARENTS, `p${i}`, KIDS), children };
  const recs: JobRec[] = [tree, ...children].map((n) => ({
    queue: n.queue,
    k: n.id!,
    cid: true,
    b: 'work',
    ms: n.data.ms ?? 0,
    priority: 5,
    bulk: false,
    tries: [],
  }));
  ctx.jobs.push(...recs);
  const sent = Date.now();
  try {
    await producer.add(tree);
    const settledAt = Date.now();
    for (const r of recs) {
      r.tries.push({ t: 1, sent, settled: settledAt, ok: true, added: true, id: r.k });
      r.ackId = r.k;
      r.ackAt = settledAt;
    }
  } catch (e) {
    for (const r of recs)
      r.tries.push({ t: 1, sent, settled: Date.now(), ok: false, err: errorMessage(e) });
    ctx.violation(`flow ${i}: add failed: ${errorMessage(e)}`);
  }
}

/** Until every parent ran and the notice keys are gone (second deliveries included). */
async function settled(ctx: Ctx, c: Redis): Promise<void> {
  const parents = new WorkQueue(c, PARENTS, ctx.queueOpts());
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    const waiting = await c.zcard(parents.keys.key('waitingChildren')).catch(() => -1);
    const left = (await flowKeys(ctx, c).catch(() => ['?'])).length;
    if (waiting === 0 && left === 0) return;
    await sleep(250);
  }
  ctx.violation(`flows: not settled within 120 s: ${(await flowKeys(ctx, c)).join(', ')}`);
}

/** The flow keys left in both queues (all are gone once every flow finished). */
async function flowKeys(ctx: Ctx, c: Redis): Promise<string[]> {
  const out: string[] = [];
  for (const name of ctx.s.queues) {
    const base = new WorkQueue(c, name, ctx.queueOpts()).keys.base;
    for (const k of await keysMatching(c, `${base}*`)) {
      const part = k.slice(base.length);
      if (/^(wc|fo|fo:t|fo:r|fc|fv|f[drfxe]:.*)$/.test(part)) out.push(`${name}:${part}`);
    }
  }
  return out;
}

async function checkFlows(ctx: Ctx): Promise<void> {
  const logs = ctx.logs!;
  const sawAll = logs.events.filter((e) => e.kind === 'W' && e.queue === PARENTS);
  const short = sawAll.filter((e) => e.fields[0] !== String(KIDS));
  for (const e of short.slice(0, 10))
    ctx.violation(`parent ${e.id} ran seeing ${e.fields[0]} of ${KIDS} children's results`);
  const parentRuns = logs.execs.filter((e) => e.queue === PARENTS);
  // Each run logs what it saw right after it starts (a run killed in between logs nothing).
  if (sawAll.length === 0 || sawAll.length > parentRuns.length)
    ctx.violation(`flows: ${sawAll.length} children checks for ${parentRuns.length} parent runs`);
  // No child completed after its parent started.
  const firstRun = new Map<string, number>();
  for (const e of parentRuns) if (!firstRun.has(e.id)) firstRun.set(e.id, e.at);
  const late = logs.dones.filter((d) => {
    if (d.queue !== CHILDREN) return false;
    const parent = `p${d.id.slice(1, d.id.indexOf('-'))}`;
    return (firstRun.get(parent) ?? Infinity) < d.at;
  });
  for (const d of late.slice(0, 10)) ctx.violation(`child ${d.id} completed after its parent ran`);
  const completedParents = new Set(logs.dones.filter((d) => d.queue === PARENTS).map((d) => d.id));
  const left = await flowKeys(ctx, ctx.admin);
  if (left.length > 0) ctx.violation(`flows: keys left: ${left.slice(0, 10).join(', ')}`);
  ctx.note(
    `flows: ${firstRun.size} parents ran (${parentRuns.length} runs, ${completedParents.size} completions logged), every run saw all ${KIDS} children: ${short.length === 0}`,
  );
}
