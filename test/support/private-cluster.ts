/**
 * A private Redis Cluster for one test file (redis-cluster.ts: 3 masters + 3 replicas), started
 * before the file's tests; after them, what the tests asked to close is closed (the last first),
 * then its clients quit and its nodes are gone. It is the cluster's handle too: its methods
 * reach the cluster once it runs.
 */
import { afterAll, beforeAll } from '@jest/globals';
import { Cluster } from 'ioredis';
import { WorkQueue, type WorkQueueOptions } from '../../lib/index.js';
import { uniqueName } from './keys.js';
import {
  CLUSTER_CLIENT_OPTIONS,
  startRedisCluster,
  type RedisClusterHandle,
} from './redis-cluster.js';

export interface PrivateCluster extends RedisClusterHandle {
  /** The file's own Cluster client (made at its first use). */
  readonly client: Cluster;
  /** Another Cluster client, `onError` listening to its errors. */
  newClient(onError?: (e: Error) => void): Cluster;
  /** A queue (logger off) on `client`, by default the file's own. */
  queue<T>(name?: string, opts?: WorkQueueOptions, client?: Cluster): WorkQueue<T, unknown>;
  /** Run `close` after the file's tests, before the clients quit. */
  closeAfter(close: () => Promise<unknown>): void;
}

export function privateCluster(): PrivateCluster {
  let handle: RedisClusterHandle | undefined;
  let own: Cluster | undefined;
  const clients: Cluster[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    handle = await startRedisCluster();
  }, 90_000);
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    for (const c of clients) await c.quit().catch(() => c.disconnect());
    await handle?.dispose();
  });
  const started = (): RedisClusterHandle => {
    if (!handle) throw new Error('privateCluster: used before its beforeAll ran');
    return handle;
  };
  const pc: PrivateCluster = {
    get nodes() {
      return started().nodes;
    },
    get dir() {
      return started().dir;
    },
    masters: () => started().masters(),
    topology: () => started().topology(),
    ownerOf: (slot) => started().ownerOf(slot),
    keySlot: (key) => started().keySlot(key),
    command: (port, ...args) => started().command(port, ...args),
    kill: (port) => started().kill(port),
    pause: (port) => started().pause(port),
    resume: (port) => started().resume(port),
    restart: (port) => started().restart(port),
    isRunning: (port) => started().isRunning(port),
    waitHealthy: (timeoutMs) => started().waitHealthy(timeoutMs),
    dispose: () => started().dispose(),
    get client() {
      return (own ??= pc.newClient());
    },
    newClient(onError) {
      const c = new Cluster(started().nodes, CLUSTER_CLIENT_OPTIONS);
      if (onError) c.on('error', onError);
      clients.push(c);
      return c;
    },
    queue<T>(name = uniqueName('c'), opts: WorkQueueOptions = {}, client = pc.client) {
      return new WorkQueue<T, unknown>(client, name, { logger: false, ...opts });
    },
    closeAfter(close) {
      closers.push(close);
    },
  };
  return pc;
}
