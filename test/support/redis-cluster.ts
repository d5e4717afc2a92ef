/**
 * A private local Redis Cluster for tests: 3 masters + 3 replicas started from the
 * `redis-server` binary, joined with `redis-cli --cluster create`.
 *
 * Plain Node module (no Jest imports). Every process it starts is tracked and SIGKILLed on
 * process exit if `dispose()` was not called; it never touches processes it did not start.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Redis } from 'ioredis';
import {
  delay,
  findRedisServerBinary,
  forgetDir,
  getFreePort,
  HOST,
  isRunning,
  RedisUnavailableError,
  removeOnExit,
  spawnRedisServer,
  stopRedisProcess,
  waitForExit,
  waitReady,
  type RedisProcess,
} from '../../tools/redis-server.js';
import { findCompanionBinary, onPort } from './redis-nodes.js';

export interface ClusterNodeAddress {
  host: string;
  port: number;
}

export interface ClusterNodeInfo extends ClusterNodeAddress {
  id: string;
  role: 'master' | 'replica';
  /** For a replica: its master's id. */
  masterId?: string;
  /** Slot ranges served (masters), e.g. [[0, 5460]]. */
  slots: Array<[number, number]>;
}

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

/** Path of redis-cli: REDIS_CLI_BIN, next to redis-server, or on PATH. */
export function findRedisCliBinary(): string | undefined {
  return findCompanionBinary('redis-cli', 'REDIS_CLI_BIN');
}

// ------------------------------------------------------------------------------ processes

interface NodeProc {
  port: number;
  busPort: number;
  dir: string;
  /** The node's redis-server process (its latest start). */
  proc: RedisProcess | undefined;
}

function nodeArgs(n: NodeProc, nodeTimeoutMs: number, extra: string[]): string[] {
  return [
    '--port',
    String(n.port),
    '--cluster-port',
    String(n.busPort),
    '--bind',
    HOST,
    '--protected-mode',
    'no',
    '--daemonize',
    'no',
    '--dir',
    n.dir,
    '--logfile',
    '',
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    `nodes-${n.port}.conf`,
    '--cluster-node-timeout',
    String(nodeTimeoutMs),
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    '--save',
    '',
    ...extra,
  ];
}

function runCli(bin: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString('utf8')));
    child.stderr.on('data', (b: Buffer) => (out += b.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out);
      else reject(new Error(`redis-cli ${args.join(' ')} failed (${code ?? signal}):\n${out}`));
    });
  });
}

// ------------------------------------------------------------------------------ queries

const onNode = <X>(port: number, fn: (r: Redis) => Promise<X>, timeoutMs = 3000) =>
  onPort(port, fn, timeoutMs);

/** Parse `CLUSTER NODES`. */
export function parseClusterNodes(text: string): ClusterNodeInfo[] {
  const out: ClusterNodeInfo[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(' ');
    if (f.length < 8) continue;
    const [id, addr, flags, master] = f as [string, string, string, string];
    const m = /^([^:]+):(\d+)/.exec(addr);
    if (!m) continue;
    const flagSet = flags.split(',');
    if (flagSet.includes('noaddr')) continue;
    const slots: Array<[number, number]> = [];
    for (const s of f.slice(8)) {
      if (s.startsWith('[')) continue; // migrating/importing marker
      const [a, b] = s.split('-');
      slots.push([Number(a), Number(b ?? a)]);
    }
    const info: ClusterNodeInfo = {
      id,
      host: m[1]!,
      port: Number(m[2]),
      role: flagSet.includes('master') ? 'master' : 'replica',
      slots,
    };
    if (master !== '-') info.masterId = master;
    if (flagSet.includes('fail') || flagSet.includes('fail?')) continue;
    out.push(info);
  }
  return out;
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
  const used = new Set<number>();
  const freePort = async () => {
    for (;;) {
      const p = await getFreePort();
      // The bus port must differ from every data port and other bus port.
      if (!used.has(p)) {
        used.add(p);
        return p;
      }
    }
  };

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
      const deadline = Date.now() + 10_000;
      for (;;) {
        const p = (n.proc = spawnRedisServer(bin, nodeArgs(n, nodeTimeoutMs, extra)));
        const ready = await waitReady(p, port, Math.max(250, deadline - Date.now()));
        if (ready.ok) return;
        await stopRedisProcess(p, 'SIGKILL');
        if (!/address already in use/i.test(p.output()) || Date.now() > deadline) {
          throw new Error(`could not restart node ${port}: ${ready.reason}\n${p.output()}`);
        }
        await delay(100);
      }
    },
    isRunning(port) {
      return isRunning(node(port).proc);
    },
    async waitHealthy(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const why = await unhealthy();
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

  async function unhealthy(): Promise<string> {
    const up = [...procs.values()].filter((n) => isRunning(n.proc));
    for (const n of up) {
      let info: string;
      try {
        info = await onNode(n.port, (r) => r.cluster('INFO') as Promise<string>, 1000);
      } catch (e) {
        return `${n.port}: ${String(e)}`;
      }
      if (!/cluster_state:ok/.test(info)) return `${n.port}: cluster_state not ok`;
      if (!/cluster_slots_ok:16384/.test(info)) return `${n.port}: not all slots ok`;
    }
    let topo: ClusterNodeInfo[];
    try {
      topo = await handle.topology();
    } catch (e) {
      return String(e);
    }
    for (const u of up) {
      const t = topo.find((x) => x.port === u.port);
      if (!t) return `node ${u.port} not (yet) seen as healthy`;
      // Every node here is a master with slots or a replica (a restarted old master turns
      // into a replica of the node that took its slots).
      if (t.role === 'master' && t.slots.length === 0)
        return `node ${u.port}: master without slots`;
    }
    let covered = 0;
    for (const m of topo.filter((t) => t.role === 'master')) {
      if (!up.some((u) => u.port === m.port) && m.slots.length > 0) {
        return `master ${m.port} serves slots but is not running`;
      }
      for (const [a, b] of m.slots) covered += b - a + 1;
    }
    if (covered !== 16384) return `${covered} of 16384 slots served`;
    for (const r of topo.filter((t) => t.role === 'replica')) {
      if (!up.some((u) => u.port === r.port)) continue;
      const repl = await onNode(r.port, (c) => c.info('replication'), 1000).catch(() => '');
      if (!/master_link_status:up/.test(repl)) return `replica ${r.port}: link to master not up`;
    }
    return '';
  }

  try {
    const total = masters * (1 + replicas);
    for (let i = 0; i < total; i++) {
      let started = false;
      for (let attempt = 0; attempt < 5 && !started; attempt++) {
        const port = await freePort();
        const busPort = await freePort();
        const dir = path.join(root, String(port));
        mkdirSync(dir, { recursive: true });
        const n: NodeProc = { port, busPort, dir, proc: undefined };
        const p = (n.proc = spawnRedisServer(bin, nodeArgs(n, nodeTimeoutMs, extra)));
        const ready = await waitReady(p, port, 10_000);
        if (ready.ok) {
          procs.set(port, n);
          started = true;
          break;
        }
        await stopRedisProcess(p, 'SIGKILL');
        if (!/address already in use/i.test(p.output())) {
          throw new Error(
            `redis-server (cluster node ${port}) did not start: ${ready.reason}\n${p.output()}`,
          );
        }
      }
      if (!started) throw new Error('could not find free ports for a cluster node');
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

/**
 * Move one slot to another master by hand, the way `redis-cli --cluster reshard` does it:
 * SETSLOT IMPORTING on the target, MIGRATING on the source, MIGRATE the keys in batches, then
 * SETSLOT NODE on the target, the source and every other master. `holdMs` keeps the slot in
 * the migrating state that long before moving keys (clients meanwhile get ASK/TRYAGAIN).
 */
export async function migrateSlot(
  cluster: RedisClusterHandle,
  slot: number,
  targetPort: number,
  opts: { holdMs?: number; batch?: number } = {},
): Promise<{ keysMoved: number; ms: number }> {
  const t0 = Date.now();
  const topo = await cluster.topology();
  const { master: source } = await cluster.ownerOf(slot);
  const target = topo.find((n) => n.port === targetPort && n.role === 'master');
  if (!target) throw new Error(`${targetPort} is not a master`);
  if (target.id === source.id) throw new Error(`slot ${slot} is already on ${targetPort}`);
  await cluster.command(target.port, 'CLUSTER', 'SETSLOT', slot, 'IMPORTING', source.id);
  await cluster.command(source.port, 'CLUSTER', 'SETSLOT', slot, 'MIGRATING', target.id);
  if (opts.holdMs) await delay(opts.holdMs);
  let keysMoved = 0;
  for (;;) {
    const keys = (await cluster.command(
      source.port,
      'CLUSTER',
      'GETKEYSINSLOT',
      slot,
      opts.batch ?? 100,
    )) as string[];
    if (keys.length === 0) break;
    await cluster.command(
      source.port,
      'MIGRATE',
      target.host,
      target.port,
      '',
      0,
      5000,
      'KEYS',
      ...keys,
    );
    keysMoved += keys.length;
  }
  await cluster.command(target.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', target.id);
  await cluster.command(source.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', target.id);
  for (const m of topo.filter(
    (n) => n.role === 'master' && n.id !== source.id && n.id !== target.id,
  )) {
    await cluster.command(m.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', target.id);
  }
  return { keysMoved, ms: Date.now() - t0 };
}
