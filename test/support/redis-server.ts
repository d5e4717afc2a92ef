/**
 * Redis servers for tests: private `redis-server` processes that a test may stop, kill or
 * restart (with AOF when asked), built on the launcher of the testing kit,
 * src/testing/redis-launcher.ts (which also picks the one shared Redis of a run for
 * test/support/global-setup.cts).
 *
 * Plain Node module: no Jest imports, so it can be reused outside of Jest (benchmarks, fault
 * runs, worker child processes).
 */
import {
  DEFAULT_START_TIMEOUT_MS,
  delay,
  isRunning,
  launchRedisServer,
  spawnRedisServer,
  stopRedisProcess,
  waitReady,
  type RedisProcess,
} from '../../src/testing/redis-launcher.js';

export { getFreePort, pingOnce, RedisUnavailableError } from '../../src/testing/redis-launcher.js';

export type RedisKind = 'binary' | 'container';

export interface StartRedisOptions {
  /** Enable AOF persistence (default: false). */
  appendonly?: boolean;
  /** AOF fsync policy (default: Redis' own default, `everysec`). */
  appendfsync?: 'always' | 'everysec' | 'no';
  /** Extra command-line arguments passed to redis-server as-is, e.g. `['--maxmemory', '10mb']`. */
  extraArgs?: string[];
  /** Port to listen on (default: a free port). */
  port?: number;
  /** Data directory (default: a fresh temp dir, removed by `dispose()`). */
  dir?: string;
  /** How long to wait for the server to answer PING (default: 5000 ms). */
  startTimeoutMs?: number;
}

export interface RedisHandle {
  url: string;
  host: string;
  port: number;
  kind: RedisKind;
  /** Data directory of the server (AOF/RDB files live here). */
  dir: string;
  /** Whether the server process is currently running. */
  readonly running: boolean;
  /** SIGTERM and wait for the process to exit. No-op if not running. */
  stop(): Promise<void>;
  /** SIGKILL and wait for the process to exit. No-op if not running. */
  kill(): Promise<void>;
  /** Start again on the same port and dir; resolves once it answers PING. */
  restart(): Promise<void>;
  /** Stop if running and remove the temp dir (only if this module created it). */
  dispose(): Promise<void>;
}

/**
 * Start a private redis-server on 127.0.0.1 (free port, fresh temp dir unless given).
 * Throws RedisUnavailableError if the binary is missing.
 */
export async function startRedis(opts: StartRedisOptions = {}): Promise<RedisHandle> {
  const startTimeoutMs = opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  const args: string[] = [];
  if (opts.appendonly) args.push('--appendonly', 'yes');
  if (opts.appendfsync) args.push('--appendfsync', opts.appendfsync);
  if (opts.extraArgs) args.push(...opts.extraArgs);
  const server = await launchRedisServer({
    args,
    port: opts.port,
    dir: opts.dir,
    startTimeoutMs,
  });
  const { port } = server;

  let current: RedisProcess | undefined = server.process;
  let disposed = false;

  const terminate = async (signal: NodeJS.Signals) => {
    const s = current;
    if (!s) return;
    await stopRedisProcess(s, signal);
    current = undefined;
  };

  const handle: RedisHandle = {
    url: server.url,
    host: server.host,
    port,
    kind: 'binary',
    dir: server.dir,
    get running() {
      return isRunning(current);
    },
    stop: () => terminate('SIGTERM'),
    kill: () => terminate('SIGKILL'),
    async restart() {
      if (disposed) throw new Error('restart() after dispose()');
      await terminate('SIGTERM');
      // The old socket may linger briefly; retry until the deadline if the port is still busy.
      const deadline = Date.now() + startTimeoutMs;
      for (;;) {
        const s = spawnRedisServer(server.bin, server.args);
        const ready = await waitReady(s, port, Math.max(deadline - Date.now(), 250));
        if (ready.ok) {
          current = s;
          return;
        }
        await stopRedisProcess(s, 'SIGKILL');
        const busy = /address already in use/i.test(s.output());
        if (!busy || Date.now() >= deadline) {
          throw new Error(
            `Could not restart redis-server on port ${port}: ${ready.reason}\n` +
              `--- redis-server output ---\n${s.output()}`,
          );
        }
        await delay(50);
      }
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      await terminate('SIGTERM');
      // Stops the first process if it still runs (not after a restart) and removes the temp dir.
      await server.dispose();
    },
  };
  return handle;
}

/** Connections the server has open now (`INFO clients`), asked through `admin`. */
export async function connectedClients(admin: {
  info(section: 'clients'): Promise<string>;
}): Promise<number> {
  return Number(/^connected_clients:(\d+)/m.exec(await admin.info('clients'))![1]);
}
