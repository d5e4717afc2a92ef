/**
 * `replicaAcks` on a plain master + replica pair (private servers): `add` waits for the
 * replica (WAIT on the same connection) and rejects with NOT_REPLICATED when too few confirm.
 * The Cluster side (a stalled replica, a failover) is in test/cluster/cluster-failover.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { queueOptionProblems, WorkQueue, WorkQueueError } from '../../../lib/index.js';
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

describe('replicaAcks', () => {
  it('add and addBulk resolve once the replica has the jobs', async () => {
    const q = new WorkQueue<{ n: number }>(client, 'acks', { logger: false, replicaAcks: 1 });
    expect(await q.add({ n: 1 })).toEqual({ id: '1', added: true });
    // More than one script chunk (2 000 jobs each): every chunk is waited for.
    const bulk = await q.addBulk(Array.from({ length: 4500 }, (_, n) => ({ data: { n } })));
    expect(bulk).toHaveLength(4500);
    // Acknowledged means on the replica already: read it there, no waiting.
    expect(await payloadCount(replicaClient, q.keys)).toBe(4501);
    expect(await q.add({ n: 2 }, { id: 'dup-1' })).toMatchObject({ added: true });
    expect(await q.add({ n: 3 }, { id: 'dup-1' })).toMatchObject({ added: false });
  });

  it('concurrent adds share a WAIT (group commit) instead of queueing one WAIT each', async () => {
    const q = new WorkQueue<{ n: number }>(client, 'acks-group', { logger: false, replicaAcks: 1 });
    await q.add({ n: -1 });
    const waits = async () =>
      Number(/cmdstat_wait:calls=(\d+)/.exec(await client.info('commandstats'))?.[1] ?? 0);
    const before = await waits();
    const results = await Promise.all(Array.from({ length: 500 }, (_, n) => q.add({ n })));
    const used = (await waits()) - before;
    expect(new Set(results.map((r) => r.id)).size).toBe(500);
    expect(await payloadCount(replicaClient, q.keys)).toBe(501);
    expect(used).toBeGreaterThanOrEqual(1);
    expect(used).toBeLessThan(20);
  });

  it('rejects with NOT_REPLICATED when fewer replicas confirm in time; the job is stored anyway', async () => {
    const q = new WorkQueue<{ n: number }>(client, 'acks-2', {
      logger: false,
      replicaAcks: 2, // only one replica exists
      replicaAckTimeoutMs: 200,
    });
    const t = Date.now();
    const err = await q.add({ n: 1 }, { id: 'job-a' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkQueueError);
    expect((err as WorkQueueError).code).toBe('NOT_REPLICATED');
    expect((err as Error).message).toMatch(/confirmed by 1 of 2 replica/);
    expect(Date.now() - t).toBeGreaterThanOrEqual(150);
    // Stored on the master: adding it again with its caller id is a no-op, no duplicate.
    expect(await q.getJob('job-a')).toMatchObject({ state: 'pending' });
    await expect(q.add({ n: 1 }, { id: 'job-a' })).rejects.toMatchObject({
      code: 'NOT_REPLICATED',
    });
    expect((await q.counts()).pending).toBe(1);
  });

  it('validates the options', () => {
    expect(queueOptionProblems({ replicaAcks: -1 })).toEqual([
      'replicaAcks must be an integer >= 0, got -1',
    ]);
    expect(queueOptionProblems({ replicaAcks: 1.5, replicaAckTimeoutMs: 0 })).toHaveLength(2);
    expect(queueOptionProblems({ replicaAcks: 0 })).toEqual([]);
    expect(() => new WorkQueue(client, 'x', { replicaAckTimeoutMs: -5 })).toThrow(
      /replicaAckTimeoutMs must be a positive integer/,
    );
  });
});
