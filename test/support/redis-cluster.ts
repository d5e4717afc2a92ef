/**
 * A private local Redis Cluster for tests: 3 masters + 3 replicas started from the
 * `redis-server` binary, joined with `redis-cli --cluster create`. Its node processes are in
 * redis-cluster-nodes.ts, what the nodes say of it in redis-cluster-topology.ts; moving a slot
 * by hand in redis-cluster-slots.ts.
 *
 * Plain Node module (no Jest imports). Every process it starts is tracked and SIGKILLed on
 * process exit if `dispose()` was not called; it never touches processes it did not start.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  delay,
  findRedisServerBinary,
  forgetDir,
  HOST,
  isRunning,
  RedisUnavailableError,
  removeOnExit,
  stopRedisProcess,
  waitForExit,
} from '../../tools/redis-server.js';
import {
  findRedisCliBinary,
  freePorts,
  restartNode,
  runCli,
  startNode,
  type NodeProc,
  type NodeSpawn,
} from './redis-cluster-nodes.js';
import {
  onNode,
  parseClusterNodes,
  unhealthy,
  type ClusterNodeAddress,
  type ClusterNodeInfo,
} from './redis-cluster-topology.js';

export type { ClusterNodeAddress, ClusterNodeInfo };

export interface StartClusterOptions {
  /** Masters (default 3). */
  masters?: number;
  /** Replicas per master (default 1). */
  replicasPerMaster?: number;
  /** `cluster-node-timeout` in ms (default 1000: failover within a few seconds). */
  nodeTimeoutMs?: number;
  /** Extra redis-server arguments for every node. */
  extraArgs?: string[];
  /** How long to wait for the cluster to become healthy (default 60 s). */
  startTimeoutMs?: number;
}

export interface RedisClusterHandle {
  /** Every node started (masters and replicas), in start order. */
  readonly nodes: ClusterNodeAddress[];
  /** Root temp dir (one sub-dir per node holds its AOF and nodes-<port>.conf). */
  readonly dir: string;
  /** Current masters, as one live node sees them. */
  masters(): Promise<ClusterNodeAddress[]>;
  /** Every node's current role and slots, as one live node sees them. */
  topology(): Promise<ClusterNodeInfo[]>;
  /** The master serving `slot` now, and its replicas. */
  ownerOf(slot: number): Promise<{ master: ClusterNodeInfo; replicas: ClusterNodeInfo[] }>;
  /** `CLUSTER KEYSLOT key`. */
  keySlot(key: string): Promise<number>;
  /** Run one command on one node (a short-lived plain connection). */
  command(port: number, ...args: Array<string | number>): Promise<unknown>;
  /** SIGKILL one node and wait for it to exit. */
  kill(port: number): Promise<void>;
  /** SIGSTOP / SIGCONT one node (it stays connected but stops answering). */
  pause(port: number): void;
  resume(port: number): void;
  /** Start a killed node again (same port, dir, AOF and nodes.conf); resolves once it answers PING. */
  restart(port: number): Promise<void>;
  /** Whether the node's process runs. */
  isRunning(port: number): boolean;
  /**
   * Wait until every running node says `cluster_state:ok`, all 16384 slots are assigned and
   * served by a running master, and every running replica's link to its master is up.
   */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Stop every node this handle started and remove the temp dir. */
  dispose(): Promise<void>;
}

// ------------------------------------------------------------------------------ start

/**
 * Start a private Redis Cluster (default 3 masters + 3 replicas) on free ports.
 * Throws RedisUnavailableError when redis-server or redis-cli is missing.
 */
export async function startRedisCluster(
  opts: StartClusterOptions = {},
): Promise<RedisClusterHandle> {
  const bin = findRedisServerBinary();
  if (!bin) {
    throw new RedisUnavailableError(
      'redis-server binary not found on PATH (or REDIS_SERVER_BIN): the cluster tests start a local Redis Cluster from it.',
    );
  }
  const cli = findRedisCliBinary();
  if (!cli) {
    throw new RedisUnavailableError(
      'redis-cli not found next to redis-server, on PATH, or in REDIS_CLI_BIN: the cluster tests need it to join the cluster (Debian: apt-get install redis-tools).',
    );
  }
  const masters = opts.masters ?? 3;
  const replicas = opts.replicasPerMaster ?? 1;
  const nodeTimeoutMs = opts.nodeTimeoutMs ?? 1000;
  const extra = opts.extraArgs ?? [];
  const startTimeoutMs = opts.startTimeoutMs ?? 60_000;
  const root = await mkdtemp(path.join(os.tmpdir(), 'wq-cluster-'));
  removeOnExit(root);
  const procs = new Map<number, NodeProc>();
  const spawnAs: NodeSpawn = { bin, nodeTimeoutMs, extra };

  const handle: RedisClusterHandle = {
    get nodes() {
      return [...procs.values()].map((n) => ({ host: HOST, port: n.port }));
    },
    dir: root,
    async masters() {
      return (await handle.topology())
        .filter((n) => n.role === 'master' && n.slots.length > 0)
        .map(({ host, port }) => ({ host, port }));
    },
    async topology() {
      let last: unknown;
      for (const n of procs.values()) {
        if (!isRunning(n.proc)) continue;
        try {
          const text = await onNode(n.port, (r) => r.cluster('NODES') as Promise<string>);
          return parseClusterNodes(text);
        } catch (e) {
          last = e;
        }
      }
      throw new Error(`no live cluster node answered CLUSTER NODES: ${String(last)}`);
    },
    async ownerOf(slot) {
      const all = await handle.topology();
      const master = all.find(
        (n) => n.role === 'master' && n.slots.some(([a, b]) => slot >= a && slot <= b),
      );
      if (!master) throw new Error(`no master serves slot ${slot}`);
      return { master, replicas: all.filter((n) => n.masterId === master.id) };
    },
    async keySlot(key) {
      const n = [...procs.values()].find((x) => isRunning(x.proc));
      if (!n) throw new Error('no running node');
      return Number(await onNode(n.port, (r) => r.cluster('KEYSLOT', key)));
    },
    command(port, ...args) {
      return onNode(port, (r) => r.call(String(args[0]), ...args.slice(1)));
    },
    async kill(port) {
      const p = node(port).proc;
      if (isRunning(p)) await stopRedisProcess(p, 'SIGKILL');
    },
    pause(port) {
      const p = node(port).proc;
      if (isRunning(p)) p.child.kill('SIGSTOP');
    },
    resume(port) {
      const p = node(port).proc;
      if (isRunning(p)) p.child.kill('SIGCONT');
    },
    async restart(port) {
      const n = node(port);
      if (isRunning(n.proc)) throw new Error(`node ${port} is running; kill it first`);
      await restartNode(spawnAs, n);
    },
    isRunning(port) {
      return isRunning(node(port).proc);
    },
    async waitHealthy(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const up = [...procs.values()].filter((n) => isRunning(n.proc)).map((n) => n.port);
        const why = await unhealthy(up, () => handle.topology());
        if (!why) return;
        if (Date.now() > deadline)
          throw new Error(`cluster not healthy after ${timeoutMs} ms: ${why}`);
        await delay(100);
      }
    },
    async dispose() {
      for (const n of procs.values()) {
        if (isRunning(n.proc)) n.proc.child.kill('SIGKILL');
      }
      await Promise.all(
        [...procs.values()].map((n) => (n.proc ? waitForExit(n.proc.child, 10_000) : true)),
      );
      await rm(root, { recursive: true, force: true });
      forgetDir(root);
    },
  };

  function node(port: number): NodeProc {
    const n = procs.get(port);
    if (!n) throw new Error(`port ${port} is not a node of this cluster`);
    return n;
  }

  try {
    const total = masters * (1 + replicas);
    const freePort = freePorts();
    for (let i = 0; i < total; i++) {
      const n = await startNode(spawnAs, root, freePort);
      procs.set(n.port, n);
    }
    await runCli(
      cli,
      [
        '--cluster',
        'create',
        ...[...procs.keys()].map((p) => `${HOST}:${p}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      startTimeoutMs,
    );
    await handle.waitHealthy(startTimeoutMs);
    return handle;
  } catch (e) {
    await handle.dispose();
    throw e;
  }
}

// ------------------------------------------------------------------------------ clients

/**
 * ioredis Cluster options for riding out a failover or a slot migration: retry a command that
 * met a closed connection, CLUSTERDOWN or TRYAGAIN for up to ~10 s (maxRedirections counts
 * every retry), and refresh the slot map often.
 */
export const CLUSTER_CLIENT_OPTIONS = {
  retryDelayOnFailover: 200,
  retryDelayOnClusterDown: 200,
  retryDelayOnTryAgain: 100,
  maxRedirections: 50,
  slotsRefreshTimeout: 2_000,
  slotsRefreshInterval: 2_000,
  redisOptions: { connectTimeout: 2_000 },
} as const;

/** `INFO errorstats` of every running node, summed: `{ CROSSSLOT: n, MOVED: n, ... }`. */
export async function clusterErrorStats(
  cluster: RedisClusterHandle,
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const { port } of cluster.nodes) {
    if (!cluster.isRunning(port)) continue;
    const text = String(await cluster.command(port, 'INFO', 'errorstats'));
    for (const m of text.matchAll(/^errorstat_([^:]+):count=(\d+)/gm)) {
      out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
    }
  }
  return out;
}
