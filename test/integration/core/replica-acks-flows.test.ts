/**
 * `replicaAcks` beyond `add` (private master + replica, as test/integration/core/replica-acks.test.ts):
 * `FlowProducer.add`/`addBulk`/`addBatch` and `upsertSchedule` resolve once the replica has their
 * jobs, reject with NOT_REPLICATED when too few replicas confirm (written on the master all the
 * same), and calling them again then adds nothing twice; the Nest `registerFlowProducer` takes
 * `replicaAcks` from the module's defaults. (The replica "falls behind" as in that test: more
 * replicas are asked for than exist.)
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import {
  FlowProducer,
  WorkQueue,
  WorkQueueError,
  type FlowNode,
  type FlowProducerOptions,
} from '../../../lib/index.js';
import { getFlowProducerToken, WorkQueueModule } from '../../../src/index.js';
import { startReplicaPair, type ReplicaPair } from '../../support/replica-pair.js';
import { payloadCount } from '../../support/payloads.js';

let pair: ReplicaPair;
let client: Redis;
let replicaClient: Redis;

beforeAll(async () => {
  pair = await startReplicaPair();
  ({ client, replicaClient } = pair);
});

afterAll(() => pair?.dispose());

/** WAIT calls the master has run so far. */
const waits = async () =>
  Number(/cmdstat_wait:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0);

/** Only one replica exists: asking for two never confirms (a replica that lags behind). */
const LAGGING = { replicaAcks: 2, replicaAckTimeoutMs: 200 } as const;

const flows = (prefix: string, o: FlowProducerOptions = {}) =>
  new FlowProducer(client, { logger: false, prefix, ...o });
const queue = (prefix: string, name: string, c: Redis = client) =>
  new WorkQueue(c, name, { logger: false, prefix });

/** A parent in one queue with children in two others; every node has a caller id but one leaf. */
const tree = (tag: string, leafId?: string): FlowNode => ({
  queue: 'orders',
  id: `order-${tag}`,
  data: { tag },
  children: [
    { queue: 'payments', id: `pay-${tag}`, data: 1 },
    { queue: 'stock', id: `pick-${tag}-a`, data: 'a' },
    {
      queue: 'stock',
      id: `pick-${tag}-b`,
      data: 'b',
      children: [{ queue: 'stock', data: 'c', ...(leafId ? { id: leafId } : {}) }],
    },
  ],
});

const jobsIn = async (prefix: string, c: Redis = client) => {
  let n = 0;
  for (const q of ['orders', 'payments', 'stock'])
    n += await payloadCount(c, queue(prefix, q).keys);
  return n;
};

const notReplicated = (e: unknown) => {
  expect(e).toBeInstanceOf(WorkQueueError);
  expect((e as WorkQueueError).code).toBe('NOT_REPLICATED');
  expect((e as Error).message).toMatch(/confirmed by 1 of 2 replica/);
};

describe('replicaAcks: flows', () => {
  it('add, addBulk and addBatch resolve once the replica has every job, behind WAIT', async () => {
    const fp = flows('rf1', { replicaAcks: 1 });
    const before = await waits();
    const added = await fp.add(tree('1'));
    expect(added.job).toEqual({ queue: 'orders', id: 'order-1' });
    // Acknowledged means on the replica already: read it there, no waiting.
    expect(await jobsIn('rf1', replicaClient)).toBe(5);
    const bulk = await fp.addBulk([tree('2'), tree('3')]);
    expect(bulk.map((f) => f.job.id)).toEqual(['order-2', 'order-3']);
    expect(await jobsIn('rf1', replicaClient)).toBe(15);
    const batch = await fp.addBatch([{ queue: 'stock', data: 'x' }], {
      onComplete: { queue: 'orders', data: 'done' },
    });
    expect(batch.jobs).toHaveLength(1);
    expect(await jobsIn('rf1', replicaClient)).toBe(17);
    expect((await waits()) - before).toBeGreaterThanOrEqual(3);
  });

  it('rejects with NOT_REPLICATED when too few replicas confirm; the flow is stored anyway', async () => {
    const t = Date.now();
    const err = await flows('rf2', LAGGING)
      .add(tree('1'))
      .catch((e: unknown) => e);
    notReplicated(err);
    expect((err as Error).message).toMatch(/flow add: stored on the master/);
    expect(Date.now() - t).toBeGreaterThanOrEqual(150);
    expect(await queue('rf2', 'orders').getJob('order-1')).toMatchObject({
      state: 'waiting-children',
    });
    expect(await jobsIn('rf2')).toBe(5);
  });

  it('adding the flow again (every node with its caller id) adds nothing twice', async () => {
    const lagging = flows('rf3', LAGGING);
    notReplicated(await lagging.add(tree('1', 'leaf-1')).catch((e: unknown) => e));
    expect(await jobsIn('rf3')).toBe(5);
    // Again while the replica still lags: NOT_REPLICATED again, nothing written.
    notReplicated(await lagging.add(tree('1', 'leaf-1')).catch((e: unknown) => e));
    // Once enough replicas confirm (here: fewer are asked for), the same call resolves.
    const again = await flows('rf3', { replicaAcks: 1 }).add(tree('1', 'leaf-1'));
    expect(again.job).toEqual({ queue: 'orders', id: 'order-1' });
    expect(again.children!.map((c) => c.job.id)).toEqual(['pay-1', 'pick-1-a', 'pick-1-b']);
    expect(again.children![2]!.children![0]!.job).toEqual({ queue: 'stock', id: 'leaf-1' });
    expect(await jobsIn('rf3')).toBe(5);
    // A node without a caller id, or one whose id is free: not the same flow, refused as taken.
    const refused = { code: 'INVALID_ARGUMENT' };
    const acked = flows('rf3', { replicaAcks: 1 });
    await expect(acked.add(tree('1'))).rejects.toMatchObject(refused);
    await expect(acked.add(tree('1', 'leaf-2'))).rejects.toMatchObject(refused);
    // Without replicaAcks, a taken id refuses the flow as always.
    await expect(flows('rf3').add(tree('1', 'leaf-1'))).rejects.toMatchObject(refused);
    expect(await jobsIn('rf3')).toBe(5);
  });

  it('validates the options, every problem listed', () => {
    let err: unknown;
    try {
      new FlowProducer(client, { replicaAcks: -1, replicaAckTimeoutMs: 0, codec: 'xml' as 'json' });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'INVALID_OPTIONS' });
    const problems = (err as WorkQueueError).problems;
    expect(problems).toEqual(
      expect.arrayContaining([
        'replicaAcks must be an integer >= 0, got -1',
        'replicaAckTimeoutMs must be a positive integer, got 0',
      ]),
    );
    expect(problems).toHaveLength(3);
    expect(flows('rf4', { replicaAcks: 1, replicaAckTimeoutMs: 50 }).options).toMatchObject({
      replicaAcks: 1,
      replicaAckTimeoutMs: 50,
    });
  });

  it("Nest: registerFlowProducer takes replicaAcks from the module's defaults", async () => {
    const ref = await Test.createTestingModule({
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: pair.master.url },
          prefix: 'rf5',
          logger: false,
          defaults: LAGGING,
        }),
        WorkQueueModule.registerFlowProducer({}, { name: 'eager', replicaAcks: 0 }),
      ],
    }).compile();
    try {
      const fp = ref.get<FlowProducer>(getFlowProducerToken());
      expect(fp.options).toMatchObject(LAGGING);
      notReplicated(await fp.add(tree('1')).catch((e: unknown) => e));
      // The registration's own option wins.
      const eager = ref.get<FlowProducer>(getFlowProducerToken('eager'));
      expect(eager.options.replicaAcks).toBe(0);
      await expect(eager.add({ queue: 'orders', data: 2 })).resolves.toBeDefined();
    } finally {
      await ref.close();
    }
  });
});

describe('replicaAcks: upsertSchedule', () => {
  const spec = { every: 60_000 };
  const template = { data: { report: 'daily' } };

  it('resolves once the replica has the schedule and its first ticks', async () => {
    const q = new WorkQueue(client, 'sched', { logger: false, prefix: 'rs1', replicaAcks: 1 });
    const before = await waits();
    expect(await q.upsertSchedule('daily', spec, template)).toBe('created');
    expect((await waits()) - before).toBe(1);
    expect(await replicaClient.hexists(q.keys.key('schedules'), 'daily')).toBe(1);
    const ticks = await payloadCount(client, q.keys);
    expect(ticks).toBeGreaterThan(0);
    expect(await payloadCount(replicaClient, q.keys)).toBe(ticks);
  });

  it('rejects with NOT_REPLICATED when too few confirm; upserting again adds nothing twice', async () => {
    const lagging = new WorkQueue(client, 'sched', { logger: false, prefix: 'rs2', ...LAGGING });
    const err = await lagging.upsertSchedule('daily', spec, template).catch((e: unknown) => e);
    notReplicated(err);
    expect((err as Error).message).toMatch(/upsertSchedule\(daily\): stored on the master/);
    // Stored on the master, with its first ticks.
    expect(await lagging.getSchedule('daily')).toMatchObject({ id: 'daily', ended: false });
    const ticks = await payloadCount(client, lagging.keys);
    expect(ticks).toBeGreaterThan(0);
    notReplicated(await lagging.upsertSchedule('daily', spec, template).catch((e: unknown) => e));
    // Once enough replicas confirm: 'unchanged', behind a write and a WAIT of its own (so that
    // it confirms the first call's writes whichever connection made them).
    const fresh = new Redis(pair.master.url, { maxRetriesPerRequest: 1 });
    try {
      const q = new WorkQueue(fresh, 'sched', { logger: false, prefix: 'rs2', replicaAcks: 1 });
      const before = await waits();
      expect(await q.upsertSchedule('daily', spec, template)).toBe('unchanged');
      expect((await waits()) - before).toBe(1);
    } finally {
      await fresh.quit();
    }
    expect(await payloadCount(client, lagging.keys)).toBe(ticks);
    expect(await payloadCount(replicaClient, lagging.keys)).toBe(ticks);
    // Without replicaAcks, the same schedule again writes nothing and sends no WAIT.
    const plain = new WorkQueue(client, 'sched', { logger: false, prefix: 'rs2' });
    const before = await waits();
    expect(await plain.upsertSchedule('daily', spec, template)).toBe('unchanged');
    expect(await waits()).toBe(before);
  });
});

describe('replicaAcks: a replica that stops (SIGSTOP), then catches up', () => {
  it('flows and schedules reject with NOT_REPLICATED, then calls again resolve', async () => {
    if (pair.replica.kind !== 'binary') return; // (a container's process is not ours to stop)
    const pid = Number(/process_id:(\d+)/.exec(await replicaClient.info('server'))![1]);
    const fp = flows('rp1', { replicaAcks: 1, replicaAckTimeoutMs: 200 });
    const q = new WorkQueue(client, 'sched', {
      logger: false,
      prefix: 'rp1',
      replicaAcks: 1,
      replicaAckTimeoutMs: 200,
    });
    const spec = { every: 60_000 };
    process.kill(pid, 'SIGSTOP');
    try {
      const lost = { code: 'NOT_REPLICATED' };
      await expect(fp.add(tree('1', 'leaf-1'))).rejects.toMatchObject(lost);
      await expect(q.upsertSchedule('s', spec, { data: 1 })).rejects.toMatchObject(lost);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // As the docs say: call again (the same caller ids, the same schedule) until it resolves.
    const untilConfirmed = async <R>(call: () => Promise<R>): Promise<R> => {
      for (let i = 0; ; i++) {
        try {
          return await call();
        } catch (e) {
          if ((e as WorkQueueError).code !== 'NOT_REPLICATED' || i >= 20) throw e;
        }
      }
    };
    const added = await untilConfirmed(() => fp.add(tree('1', 'leaf-1')));
    expect(added.job).toEqual({ queue: 'orders', id: 'order-1' });
    expect(await untilConfirmed(() => q.upsertSchedule('s', spec, { data: 1 }))).toBe('unchanged');
    // Confirmed: every job is on the replica, once.
    expect(await jobsIn('rp1', replicaClient)).toBe(5);
    expect(await payloadCount(replicaClient, q.keys)).toBe(await payloadCount(client, q.keys));
    expect(await replicaClient.hexists(q.keys.key('schedules'), 's')).toBe(1);
  });
});
