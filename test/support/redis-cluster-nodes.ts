/**
 * The processes of a private Redis Cluster (redis-cluster.ts): one `redis-server` per node, with
 * its own data dir and free ports, started again on the same port after a kill; and `redis-cli`,
 * which joins them.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  delay,
  getFreePort,
  redisServerArgs,
  spawnRedisServer,
  stopRedisProcess,
  waitReady,
  type RedisProcess,
} from '../../tools/redis-server.js';
import { findCompanionBinary } from './redis-nodes.js';

/** Path of redis-cli: REDIS_CLI_BIN, next to redis-server, or on PATH. */
export function findRedisCliBinary(): string | undefined {
  return findCompanionBinary('redis-cli', 'REDIS_CLI_BIN');
}

export interface NodeProc {
  port: number;
  busPort: number;
  dir: string;
  /** The node's redis-server process (its latest start). */
  proc: RedisProcess | undefined;
}

/** How every node of one cluster runs. */
export interface NodeSpawn {
  /** The redis-server binary. */
  bin: string;
  nodeTimeoutMs: number;
  /** Extra redis-server arguments for every node. */
  extra: string[];
}

function nodeArgs(n: NodeProc, s: NodeSpawn): string[] {
  return redisServerArgs(n.port, n.dir, [
    '--cluster-port',
    String(n.busPort),
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    `nodes-${n.port}.conf`,
    '--cluster-node-timeout',
    String(s.nodeTimeoutMs),
    '--appendonly',
    'yes',
    '--appendfsync',
    'always',
    ...s.extra,
  ]);
}

/** Free ports, each given once (a bus port must differ from every data port and other bus port). */
export function freePorts(): () => Promise<number> {
  const used = new Set<number>();
  return async () => {
    for (;;) {
      const p = await getFreePort();
      if (!used.has(p)) {
        used.add(p);
        return p;
      }
    }
  };
}

/** Start one node on free ports (a data dir of its own under `root`), trying again if one is taken. */
export async function startNode(
  s: NodeSpawn,
  root: string,
  freePort: () => Promise<number>,
): Promise<NodeProc> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const busPort = await freePort();
    const dir = path.join(root, String(port));
    mkdirSync(dir, { recursive: true });
    const n: NodeProc = { port, busPort, dir, proc: undefined };
    const p = (n.proc = spawnRedisServer(s.bin, nodeArgs(n, s)));
    const ready = await waitReady(p, port, 10_000);
    if (ready.ok) return n;
    await stopRedisProcess(p, 'SIGKILL');
    if (!/address already in use/i.test(p.output())) {
      throw new Error(
        `redis-server (cluster node ${port}) did not start: ${ready.reason}\n${p.output()}`,
      );
    }
  }
  throw new Error('could not find free ports for a cluster node');
}

/** Start a killed node again (same port, dir, AOF and nodes.conf); resolves once it answers PING. */
export async function restartNode(s: NodeSpawn, n: NodeProc): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const p = (n.proc = spawnRedisServer(s.bin, nodeArgs(n, s)));
    const ready = await waitReady(p, n.port, Math.max(250, deadline - Date.now()));
    if (ready.ok) return;
    await stopRedisProcess(p, 'SIGKILL');
    if (!/address already in use/i.test(p.output()) || Date.now() > deadline) {
      throw new Error(`could not restart node ${n.port}: ${ready.reason}\n${p.output()}`);
    }
    await delay(100);
  }
}

export function runCli(bin: string, args: string[], timeoutMs: number): Promise<string> {
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
