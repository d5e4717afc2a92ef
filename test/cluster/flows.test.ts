/**
 * Flows on a real Redis Cluster (3 masters + 3 replicas): a parent's queue and its children's
 * queues on different masters (asserted), so no script touches both: results reach the parent
 * through the notice protocol (docs/internals/flows.md), every policy holds, a parent waits for
 * 1 000 children and five levels, cancel / drain / obliterate reach across masters, two adds of
 * one flow at once write one (its root's caller id claimed), and a
 * failover of the parent queue's master leaves no parent waiting forever.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Cluster } from 'ioredis';
import {
  FlowProducer,
  NonRetryableError,
  WorkQueue,
  Worker,
  type FlowNode,
  type Handler,
} from '../../lib/index.js';
import {
  CLUSTER_CLIENT_OPTIONS,
  clusterErrorStats,
  startRedisCluster,
  type RedisClusterHandle,
} from '../support/redis-cluster.js';
import { uniqueName } from '../support/keys.js';
import { waitFor } from '../support/wait.js';

let cluster: RedisClusterHandle;
let client: Cluster;
const workers: Worker<never, never>[] = [];
const queues: WorkQueue[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  client = new Cluster(cluster.nodes, CLUSTER_CLIENT_OPTIONS);
  client.on('error', () => undefined);
}, 90_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.close({ timeoutMs: 0 })));
  await Promise.all(queues.map((q) => q.close()));
  await client?.quit().catch(() => client.disconnect());
  await cluster?.dispose();
});

const PREFIX = 'fc';
const opts = { prefix: PREFIX, logger: false as const, maxAttempts: 1 };

function queue<T = unknown>(name: string): WorkQueue<T> {
  const q = new WorkQueue<T>(client, name, opts);
  queues.push(q as WorkQueue);
  return q;
}

function worker<T, R>(name: string, h: Handler<T, R>): Worker<T, R> {
  const w = new Worker(queue<T>(name) as WorkQueue<T, R>, h, { concurrency: 8 });
  w.on('error', () => undefined);
  workers.push(w as unknown as Worker<never, never>);
  return w;
}

const producer = () => new FlowProducer(client, { prefix: PREFIX, logger: false });

/** The port of the master that serves queue `name`'s slot. */
async function masterOf(name: string): Promise<number> {
  const slot = await cluster.keySlot(new WorkQueue(client, name, opts).keys.base);
  return (await cluster.ownerOf(slot)).master.port;
}

/** Queue names `<tag>-<role>-…`, each on a master other than the first's (asserted). */
async function apart(tag: string, roles: string[]): Promise<string[]> {
  const names: string[] = [];
  const used: number[] = [];
  for (const role of roles) {
    for (let i = 0; ; i++) {
      const name = `${tag}-${role}-${i}`;
      const port = await masterOf(name);
      if (names.length === 0 || port !== used[0]) {
        names.push(name);
        used.push(port);
        break;
      }
    }
  }
  for (const port of used.slice(1)) expect(port).not.toBe(used[0]);
  return names;
}

describe('flows on a Redis Cluster, parent and children on different masters', () => {
  it('results reach the parent; it runs once, after its children', async () => {
    const [orders, pays, stock] = await apart(uniqueName('r'), ['orders', 'pays', 'stock']);
    const tree = await producer().add({
      queue: orders!,
      data: { order: 7 },
      children: [
        { queue: pays!, data: 5, id: 'pay' },
        { queue: stock!, data: 'sku' },
      ],
    });
    expect((await queue(orders!).getJob(tree.job.id))?.state).toBe('waiting-children');
    let runs = 0;
    let seen: unknown;
    worker(pays!, (job) => (job.data as number) * 2);
    worker(stock!, () => 'reserved');
    worker(orders!, async (job) => {
      runs++;
      seen = await job.getChildrenResults();
    });
    // The handler counts its run before it reads the results: wait for what it read.
    await waitFor(() => seen !== undefined, {
      what: "the parent to read its children's results",
      timeoutMs: 15_000,
    });
    expect(seen).toEqual({
      [`${pays}:pay`]: 10,
      [`${stock}:${tree.children![1]!.job.id}`]: 'reserved',
    });
    // Kept as completed (keepCompleted), like any job.
    await waitFor(async () => (await queue(orders!).getJob(tree.job.id))?.state === 'completed', {
      what: 'the parent completed',
    });
    expect(await queue(pays!).getJob('pay')).toMatchObject({ state: 'completed', result: 10 });
    expect(runs).toBe(1);
  });

  it('fail-parent cancels the siblings (on another master); ignore lets the parent run', async () => {
    const [parents, bad, later] = await apart(uniqueName('p'), ['parents', 'bad', 'later']);
    const flows = producer();
    const failing = await flows.add({
      queue: parents!,
      data: 1,
      children: [
        { queue: bad!, data: 1, id: 'bad-1' },
        { queue: later!, data: 2, id: 'later-1', delayMs: 60_000 },
      ],
    });
    const ignoring = await flows.add({
      queue: parents!,
      data: 2,
      children: [{ queue: bad!, data: 3, id: 'bad-2', onFailure: 'ignore' }],
    });
    worker(bad!, () => {
      throw new NonRetryableError('declined');
    });
    let failures: unknown;
    worker(parents!, async (job) => void (failures = await job.getChildrenFailures()));
    const p = queue(parents!);
    await waitFor(async () => (await p.getJob(failing.job.id))?.state === 'dead', {
      what: 'the failing parent dead',
      timeoutMs: 15_000,
    });
    expect((await p.getJob(failing.job.id))?.deadReason).toBe(
      `child ${bad}/bad-1 failed: declined`,
    );
    await waitFor(async () => (await queue(later!).getJob('later-1')) === null, {
      what: 'the sibling cancelled',
    });
    await waitFor(() => failures, { what: 'the ignoring parent to run', timeoutMs: 15_000 });
    expect(failures).toEqual({ [`${bad}:bad-2`]: 'declined' });
    expect(ignoring.children).toHaveLength(1);
  });

  it('five levels across masters, and 1 000 children on one parent', async () => {
    const [a, b, c] = await apart(uniqueName('n'), ['a', 'b', 'c']);
    const chain = (level: number): FlowNode => ({
      queue: [a!, b!, c!][level % 3]!,
      data: level,
      ...(level < 5 ? { children: [chain(level + 1)] } : {}),
    });
    const order: number[] = [];
    const record = (job: { data: unknown }) => void order.push(job.data as number);
    for (const q of [a!, b!, c!]) worker(q, record);
    await producer().add(chain(1));
    await waitFor(() => order.length === 5, { what: 'five levels', timeoutMs: 20_000 });
    expect(order).toEqual([5, 4, 3, 2, 1]);

    const [top, kids] = await apart(uniqueName('k'), ['top', 'kids']);
    let results: Record<string, unknown> | undefined;
    worker(kids!, (job) => job.data);
    worker(top!, async (job) => void (results = await job.getChildrenResults()));
    const children = Array.from({ length: 1000 }, (_, i) => ({ queue: kids!, data: i }));
    await producer().add({ queue: top!, data: null, children });
    await waitFor(() => results, { what: '1 000 children', timeoutMs: 60_000 });
    expect(Object.keys(results!)).toHaveLength(1000);
  }, 120_000);

  it('cancel of a parent, drain and obliterate of a child queue reach across masters', async () => {
    const [parents, kids] = await apart(uniqueName('a'), ['parents', 'kids']);
    const flows = producer();
    await flows.add({
      queue: parents!,
      data: 1,
      id: 'cancelled',
      children: [{ queue: kids!, data: 1, id: 'k-cancelled' }],
    });
    expect(await queue(parents!).cancel('cancelled')).toBe(true);
    expect(await queue(kids!).getJob('k-cancelled')).toBeNull();
    const drained = await flows.add({
      queue: parents!,
      data: 2,
      children: [{ queue: kids!, data: 2 }],
    });
    expect(await queue(kids!).drain()).toBe(1);
    expect(await queue(parents!).getJob(drained.job.id)).toMatchObject({ state: 'dead' });
    const gone = await flows.add({
      queue: parents!,
      data: 3,
      children: [{ queue: kids!, data: 3 }],
    });
    await queue(kids!).obliterate();
    expect(await queue(parents!).getJob(gone.job.id)).toMatchObject({
      state: 'dead',
      deadReason: expect.stringContaining('queue obliterated'),
    });
    expect((await queue(parents!).repair()).fixes).toEqual([]);
  });

  it("two adds of one flow at once, a caller id on its root alone: the root's claim refuses one before it writes anything", async () => {
    const [orders, pays, stock] = await apart(uniqueName('claim'), ['orders', 'pays', 'stock']);
    const ran: string[] = [];
    worker(pays!, (job) => void ran.push(job.data as string));
    worker(stock!, (job) => void ran.push(job.data as string));
    const [a, b] = [producer(), producer()];
    const won: string[] = [];
    for (let i = 0; i < 10; i++) {
      const flow = (who: string): FlowNode => ({
        queue: orders!,
        id: `order-${i}`,
        data: i,
        children: [
          { queue: pays!, data: `${who}${i}:pay` },
          { queue: stock!, data: `${who}${i}:stock` },
        ],
      });
      const outcomes = await Promise.allSettled([a.add(flow('a')), b.add(flow('b'))]);
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      outcomes.forEach((o, k) => {
        if (o.status === 'fulfilled') won.push(`${k === 0 ? 'a' : 'b'}${i}`);
        else
          expect(String(o.reason)).toMatch(
            new RegExp(`flow refused: .*id: job "order-${i}" (is being added|already exists)`),
          );
      });
    }
    await waitFor(() => ran.length >= 20, { what: "the winners' children to run" });
    expect(ran.map((r) => r.split(':')[0]).sort()).toEqual([...won, ...won].sort());
    for (const q of [pays!, stock!]) expect((await queue(q).counts()).pending).toBe(0);
    expect(await client.exists(queue(orders!).keys.key('flowClaims'))).toBe(0);
  });

  it('an add refused after claiming its root releases the claim: the flow added again at once is written', async () => {
    const [orders, pays] = await apart(uniqueName('release'), ['orders', 'pays']);
    await queue(pays!).add('there first', { id: 'taken' });
    const flow = (childId: string): FlowNode => ({
      queue: orders!,
      id: 'order-x',
      data: 'x',
      children: [{ queue: pays!, id: childId, data: 'pay' }],
    });
    await expect(producer().add(flow('taken'))).rejects.toThrow(
      /flow refused: children\[0\]\.id: job "taken" already exists in queue/,
    );
    const tree = await producer().add(flow('free'));
    expect(tree.job.id).toBe('order-x');
    expect((await queue(orders!).getJob('order-x'))?.state).toBe('waiting-children');
    expect(await client.exists(queue(orders!).keys.key('flowClaims'))).toBe(0);
  });

  it('no CROSSSLOT error anywhere', async () => {
    const stats = await clusterErrorStats(cluster);
    expect(stats.CROSSSLOT ?? 0).toBe(0);
  });
});
