/**
 * The fault proof of flows on a Redis Cluster with one failover (issue 26): 100 flows of one
 * parent and 10 children, the parents' queue and the children's on different masters; while
 * the children run, the parents' master is SIGKILLed and its replica takes over. Notices sent
 * meanwhile fail and are delivered again (the worker, clean(), the second delivery of each
 * notice covers one applied by the old master but not replicated): every parent runs after all
 * its children, none is left waiting, a parent completes more than once only when its first
 * completion was lost with the old master.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import { FlowProducer, WorkQueue, Worker } from '../../lib/index.js';
import {
  CLUSTER_CLIENT_OPTIONS,
  startRedisCluster,
  type RedisClusterHandle,
} from '../support/redis-cluster.js';
import { keysMatching, uniqueName } from '../support/keys.js';
import { waitFor } from '../support/wait.js';

let cluster: RedisClusterHandle;
let client: Cluster;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = new Cluster(cluster.nodes, CLUSTER_CLIENT_OPTIONS);
  client.on('error', () => undefined);
}, 90_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await client?.quit().catch(() => client.disconnect());
  await cluster?.dispose();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PREFIX = 'ff';
const FLOWS = 100;
const KIDS = 10;
const opts = { prefix: PREFIX, logger: false as const, heartbeatTimeoutMs: 1_000 };

async function slotOf(name: string): Promise<number> {
  return cluster.keySlot(new WorkQueue(client, name, opts).keys.base);
}

/** The replica's replication offset has reached the master's (what it acknowledged is there). */
async function replicated(master: number, replica: number): Promise<void> {
  const offset = async (port: number, field: string) =>
    Number(
      new RegExp(`${field}:(\\d+)`).exec(
        String(await cluster.command(port, 'INFO', 'replication')),
      )?.[1],
    );
  const target = await offset(master, 'master_repl_offset');
  await waitFor(async () => (await offset(replica, 'slave_repl_offset')) >= target, {
    what: 'the replica to catch up',
  });
}

describe('flows through a failover of the parents’ master', () => {
  it('every parent runs after all its children; none is left waiting', async () => {
    const tag = uniqueName('fo');
    const parents = `${tag}-orders`;
    let kids = `${tag}-items-0`;
    const pSlot = await slotOf(parents);
    const { master, replicas } = await cluster.ownerOf(pSlot);
    for (let i = 1; (await cluster.ownerOf(await slotOf(kids))).master.port === master.port; i++)
      kids = `${tag}-items-${i}`;
    expect((await cluster.ownerOf(await slotOf(kids))).master.port).not.toBe(master.port);

    const pq = new WorkQueue<number>(client, parents, opts);
    const kq = new WorkQueue<number>(client, kids, opts);
    closers.push(
      () => pq.close(),
      () => kq.close(),
    );
    const flows = new FlowProducer(client, { prefix: PREFIX, logger: false });
    const added = [];
    for (let i = 0; i < FLOWS; i++) {
      const children = Array.from({ length: KIDS }, (_, j) => ({ queue: kids, data: j }));
      added.push(await flows.add({ queue: parents, data: i, id: `p${i}`, children }));
    }
    await replicated(master.port, replicas[0]!.port);

    const runs = new Map<string, number[]>(); // parent id -> results seen per run
    const completions = new Map<string, number[]>(); // parent id -> when
    let kidsDone = 0;
    const kw = new Worker(
      kq,
      async (job) => {
        await sleep(20 + (job.data % 5) * 10);
        kidsDone++;
        return job.data;
      },
      { concurrency: 10, idleTimeoutMs: 1_000 },
    );
    const pw = new Worker(
      pq,
      async (job) => {
        const seen = Object.keys(await job.getChildrenResults()).length;
        runs.set(job.id, [...(runs.get(job.id) ?? []), seen]);
      },
      { concurrency: 10, idleTimeoutMs: 1_000 },
    );
    pw.on('completed', (job) =>
      completions.set(job.id, [...(completions.get(job.id) ?? []), Date.now()]),
    );
    for (const w of [kw, pw]) {
      w.on('error', () => undefined);
      closers.push(() => w.close({ timeoutMs: 2_000 }));
    }

    // While the children run (and notices flow to the parents' master): kill it.
    await waitFor(() => kidsDone >= 150, { what: 'children running', timeoutMs: 30_000 });
    const tKill = Date.now();
    await cluster.kill(master.port);
    const promoted = await waitFor(
      async () => {
        const o = await cluster.ownerOf(pSlot).catch(() => undefined);
        return o && o.master.port !== master.port ? o.master.port : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100, what: 'the replica to take over' },
    );
    const promotedAt = Date.now();

    await waitFor(() => runs.size === FLOWS, { what: 'every parent to run', timeoutMs: 60_000 });
    await waitFor(async () => (await client.zcard(pq.keys.key('waitingChildren'))) === 0, {
      what: 'no parent waiting',
    });
    // Every run saw all its children's results: it ran after all of them.
    for (const [id, seen] of runs)
      expect({ id, seen: seen.every((n) => n === KIDS) }).toEqual({ id, seen: true });
    // A parent completes twice only when its first completion was lost with the old master.
    const twice = [...completions].filter(([, at]) => at.length > 1);
    for (const [id, at] of twice) {
      expect({ id, lostWithMaster: at[0]! <= promotedAt && at[0]! >= tKill - 2_000 }).toEqual({
        id,
        lostWithMaster: true,
      });
    }
    // The notice keys drain too (their second deliveries): nothing of a flow is left.
    const flowKeys = async () => {
      const keys = await Promise.all(
        client.nodes('master').map((n) => keysMatching(n, `${PREFIX}:*`).catch(() => [])),
      );
      return keys.flat().filter((k) => /\}:(wc|fo|fo:t|fo:r|fc|fv|f[drfxe]:\d+)$/.test(k));
    };
    await waitFor(async () => (await flowKeys()).length === 0, {
      what: 'the flow keys to be gone',
      timeoutMs: 30_000,
    });
    console.log(
      `flows failover: killed master ${master.port}, replica ${promoted} serves the parents after ${promotedAt - tKill} ms; ` +
        `${runs.size} parents ran (${[...runs.values()].flat().length} runs), ${twice.length} completed twice (first completion lost with the old master)`,
    );
    expect(added).toHaveLength(FLOWS);
  }, 180_000);
});
