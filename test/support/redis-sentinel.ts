/**
 * A private local Redis Sentinel setup for tests: one master and its replicas (`redis-server`)
 * watched by three sentinels (`redis-sentinel`, quorum 2), all on free loopback ports, with short
 * timeouts so a failover takes a few seconds. Members can be SIGKILLed and started again.
 *
 * Plain Node module (no Jest imports). Every process it starts is SIGKILLed on process exit if
 * `dispose()` was not called; it never touches processes it did not start.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  delay,
  findRedisServerBinary,
  forgetDir,
  getFreePort,
  HOST,
  isRunning,
  redisServerArgs,
  removeOnExit,
  spawnRedisServer,
  stopRedisProcess,
  waitForExit,
  waitReady,
  type RedisProcess,
} from '../../tools/redis-server.js';
import { findCompanionBinary, onPort } from './redis-nodes.js';
import { infoField, onSwitch, stability, type SwitchEvent } from './redis-sentinel-state.js';

export type { SwitchEvent };

export interface StartSentinelOptions {
  /** The master's name in the sentinels (default `wqmaster`). */
  name?: string;
  /** Replicas of the master (default 1). */
  replicas?: number;
  /** Sentinels (default 3) and their quorum (default 2). */
  sentinels?: number;
  quorum?: number;
  /** `down-after-milliseconds` (default 1000) and `failover-timeout` (default 10 000). */
  downAfterMs?: number;
  failoverTimeoutMs?: number;
  /** Extra redis-server arguments for every data node. */
  extraArgs?: string[];
}

export interface Address {
  host: string;
  port: number;
}

export interface RedisSentinelHandle {
  /** The master's name (what clients pass as `name`). */
  readonly name: string;
  /** The sentinels' addresses (what clients pass as `sentinels`). */
  readonly sentinels: Address[];
  /** Ports of the data nodes (master and replicas), in start order. */
  readonly servers: number[];
  readonly dir: string;
  /** The master the first answering sentinel names now. */
  master(): Promise<number>;
  /**
   * Wait until every running sentinel names the same running master, that node says it is a
   * master, every other running data node replicates it with its link up, and every sentinel
   * knows the others and those replicas. Resolves the master's port.
   */
  waitStable(timeoutMs?: number): Promise<number>;
  /**
   * `SENTINEL FAILOVER <name>` on a sentinel (default the first): a manual failover, no
   * agreement needed.
   */
  failover(via?: number): Promise<void>;
  /** Every `+switch-master` any sentinel announces from now on (each switch once). */
  onSwitch(listener: (e: SwitchEvent) => void): Promise<() => void>;
  /** Run one command on one node or sentinel (a short-lived plain connection). */
  command(port: number, ...args: Array<string | number>): Promise<unknown>;
  /** `INFO replication` role of a data node. */
  role(port: number): Promise<'master' | 'slave'>;
  /** SIGKILL one data node and wait for it to exit. */
  kill(port: number): Promise<void>;
  /** Start a killed data node again (same port and dir, as a master of nothing until sentinels reconfigure it). */
  restart(port: number): Promise<void>;
  isRunning(port: number): boolean;
  /** SIGSTOP / SIGCONT a data node or a sentinel (it stays connected but answers nothing). */
  pause(port: number): void;
  resume(port: number): void;
  /** Stop every process this handle started and remove the temp dir. */
  dispose(): Promise<void>;
}

/** Path of redis-sentinel: REDIS_SENTINEL_BIN, next to redis-server, or on PATH. */
export function findRedisSentinelBinary(): string | undefined {
  return findCompanionBinary('redis-sentinel', 'REDIS_SENTINEL_BIN');
}

interface Member {
  port: number;
  dir: string;
  args: string[];
  proc: RedisProcess | undefined;
}

/**
 * Start a master, its replicas and the sentinels watching them, and wait until the sentinels
 * know every member. Throws one clear error when redis-server or redis-sentinel is missing.
 */
export async function startRedisSentinel(
  opts: StartSentinelOptions = {},
): Promise<RedisSentinelHandle> {
  const serverBin = findRedisServerBinary();
  const sentinelBin = findRedisSentinelBinary();
  if (!serverBin || !sentinelBin) {
    // (Not RedisUnavailableError: a REDIS_URL or a container is no help here.)
    throw new Error(
      `${!serverBin ? 'redis-server' : 'redis-sentinel'} not found (PATH, REDIS_SERVER_BIN or REDIS_SENTINEL_BIN): ` +
        'the Sentinel tests start a master, a replica and three sentinels from the redis-server and ' +
        'redis-sentinel binaries (Debian: apt-get install redis-server redis-sentinel; .ci/run does).',
    );
  }
  const name = opts.name ?? 'wqmaster';
  const quorum = opts.quorum ?? 2;
  const root = await mkdtemp(path.join(os.tmpdir(), 'wq-sentinel-'));
  removeOnExit(root);
  const servers = new Map<number, Member>();
  const sentinels = new Map<number, Member>();

  const startMember = async (m: Member, bin: string, what: string) => {
    const p = (m.proc = spawnRedisServer(bin, m.args));
    const ready = await waitReady(p, m.port, 10_000);
    if (ready.ok) return;
    await stopRedisProcess(p, 'SIGKILL');
    throw new Error(`${what} on port ${m.port} did not start: ${ready.reason}\n${p.output()}`);
  };
  // Data nodes: a full resync at once (no diskless-sync delay), no persistence.
  const nodeArgs = (port: number, dir: string, master?: number) =>
    redisServerArgs(port, dir, [
      '--repl-diskless-sync',
      'yes',
      '--repl-diskless-sync-delay',
      '0',
      '--repl-ping-replica-period',
      '1',
      ...(master === undefined ? [] : ['--replicaof', HOST, String(master)]),
      ...(opts.extraArgs ?? []),
    ]);

  const handle: RedisSentinelHandle = {
    name,
    get sentinels() {
      return [...sentinels.keys()].map((port) => ({ host: HOST, port }));
    },
    get servers() {
      return [...servers.keys()];
    },
    dir: root,
    async master() {
      let last: unknown;
      for (const s of sentinels.keys()) {
        try {
          const r = (await onPort(s, (c) =>
            c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name),
          )) as [string, string];
          return Number(r[1]);
        } catch (e) {
          last = e;
        }
      }
      throw new Error(`no sentinel answered: ${String(last)}`);
    },
    async waitStable(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const up = [...servers.values()].filter((m) => isRunning(m.proc)).map((m) => m.port);
        const r = await stability(name, [...sentinels.keys()], up).catch((e: unknown) => ({
          why: String(e),
        }));
        if ('port' in r) return r.port;
        if (Date.now() > deadline) {
          throw new Error(`sentinel setup not stable after ${timeoutMs} ms: ${r.why}`);
        }
        await delay(100);
      }
    },
    async failover(via = [...sentinels.keys()][0]!) {
      await onPort(via, (c) => c.call('SENTINEL', 'FAILOVER', name));
    },
    onSwitch(listener) {
      return onSwitch(name, [...sentinels.keys()], listener);
    },
    command(port, ...args) {
      return onPort(port, (r) => r.call(String(args[0]), ...args.slice(1)));
    },
    async role(port) {
      const text = String(await handle.command(port, 'INFO', 'replication'));
      return infoField(text, 'role') === 'master' ? 'master' : 'slave';
    },
    async kill(port) {
      const p = member(port).proc;
      if (isRunning(p)) await stopRedisProcess(p, 'SIGKILL');
    },
    async restart(port) {
      const m = member(port);
      if (isRunning(m.proc)) throw new Error(`node ${port} is running; kill it first`);
      // Without --replicaof: it comes back alone, as the sentinels will find it.
      m.args = nodeArgs(port, m.dir);
      await startMember(m, serverBin, 'redis-server');
    },
    isRunning(port) {
      return isRunning(member(port).proc);
    },
    pause(port) {
      const p = (servers.get(port) ?? sentinels.get(port))?.proc;
      if (isRunning(p)) p.child.kill('SIGSTOP');
    },
    resume(port) {
      const p = (servers.get(port) ?? sentinels.get(port))?.proc;
      if (isRunning(p)) p.child.kill('SIGCONT');
    },
    async dispose() {
      const all = [...servers.values(), ...sentinels.values()];
      for (const m of all) if (isRunning(m.proc)) m.proc.child.kill('SIGKILL');
      await Promise.all(all.map((m) => (m.proc ? waitForExit(m.proc.child, 10_000) : true)));
      await rm(root, { recursive: true, force: true });
      forgetDir(root);
    },
  };

  function member(port: number): Member {
    const m = servers.get(port);
    if (!m) throw new Error(`port ${port} is not a data node of this setup`);
    return m;
  }

  try {
    const ports = new Set<number>();
    const freePort = async () => {
      for (;;) {
        const p = await getFreePort();
        if (!ports.has(p)) {
          ports.add(p);
          return p;
        }
      }
    };
    let masterPort = 0;
    for (let i = 0; i <= (opts.replicas ?? 1); i++) {
      const port = await freePort();
      const dir = path.join(root, `redis-${port}`);
      mkdirSync(dir);
      const m: Member = {
        port,
        dir,
        args: nodeArgs(port, dir, i === 0 ? undefined : masterPort),
        proc: undefined,
      };
      if (i === 0) masterPort = port;
      servers.set(port, m);
      await startMember(m, serverBin, 'redis-server');
    }
    for (let i = 0; i < (opts.sentinels ?? 3); i++) {
      const port = await freePort();
      const dir = path.join(root, `sentinel-${port}`);
      mkdirSync(dir);
      // The sentinel rewrites its config file: one of its own, in its own dir.
      const conf = path.join(dir, 'sentinel.conf');
      writeFileSync(
        conf,
        [
          `port ${port}`,
          `bind ${HOST}`,
          'protected-mode no',
          'daemonize no',
          'logfile ""',
          `dir ${dir}`,
          `sentinel monitor ${name} ${HOST} ${masterPort} ${quorum}`,
          `sentinel down-after-milliseconds ${name} ${opts.downAfterMs ?? 1_000}`,
          `sentinel failover-timeout ${name} ${opts.failoverTimeoutMs ?? 10_000}`,
          `sentinel parallel-syncs ${name} 1`,
          '',
        ].join('\n'),
      );
      const m: Member = { port, dir, args: [conf], proc: undefined };
      sentinels.set(port, m);
      await startMember(m, sentinelBin, 'redis-sentinel');
    }
    await handle.waitStable(30_000);
    return handle;
  } catch (e) {
    await handle.dispose();
    throw e;
  }
}
