/**
 * A private master and its replica, in sync, with a client on each: for the `replicaAcks` tests
 * (test/integration/core/replica-acks*.test.ts).
 */
import { Redis } from 'ioredis';
import { startRedis, type RedisHandle } from './redis-server.js';
import { waitFor } from './wait.js';

export interface ReplicaPair {
  master: RedisHandle;
  replica: RedisHandle;
  /** On the master. */
  client: Redis;
  /** On the replica (reads what the master has replicated). */
  replicaClient: Redis;
  dispose(): Promise<void>;
}

export async function startReplicaPair(): Promise<ReplicaPair> {
  const master = await startRedis();
  const replica = await startRedis({
    extraArgs: ['--replicaof', master.host, String(master.port)],
  });
  const client = new Redis(master.url, { maxRetriesPerRequest: 1 });
  const replicaClient = new Redis(replica.url, { maxRetriesPerRequest: 1 });
  await waitFor(async () => /master_link_status:up/.test(await replicaClient.info('replication')), {
    timeoutMs: 10_000,
    what: 'replica in sync',
  });
  return {
    master,
    replica,
    client,
    replicaClient,
    async dispose() {
      await client.quit();
      await replicaClient.quit();
      await replica.dispose();
      await master.dispose();
    },
  };
}
