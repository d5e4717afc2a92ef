/**
 * Starting Redis servers for tests and for local runners (e.g. a sample app runner).
 *
 * Plain Node module: no Jest imports, so it can be reused outside of Jest.
 *
 * - `startRedis()` always starts a PRIVATE `redis-server` process (tests that stop, kill or
 *   restart Redis use it).
 * - `acquireSharedRedis()` picks ONE Redis for a whole run: `REDIS_URL` if set, else a Docker
 *   engine via testcontainers (only if one is reachable), else the local `redis-server` binary.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

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

export interface SharedRedis {
  url: string;
  kind: 'env' | 'container' | 'binary';
  dispose(): Promise<void>;
}

const HOST = '127.0.0.1';
const DEFAULT_START_TIMEOUT_MS = 5_000;
const STOP_TIMEOUT_MS = 10_000;
const DOCKER_PROBE_TIMEOUT_MS = 1_000;
const OUTPUT_LIMIT = 64 * 1024;

const HOW_TO_GET_REDIS = [
  'Options:',
  '  1. set REDIS_URL to a Redis you run yourself (e.g. REDIS_URL=redis://127.0.0.1:6379),',
  '  2. run a Docker engine so testcontainers can start redis:7, or',
  '  3. install the redis-server binary (Debian/Ubuntu: apt-get install redis-server).',
].join('\n');

export class RedisUnavailableError extends Error {
  constructor(message: string) {
    super(`${message}\n${HOW_TO_GET_REDIS}`);
    this.name = 'RedisUnavailableError';
  }
}

// ---------------------------------------------------------------------------------------------
// Binary lookup and small helpers

/** Path of the redis-server binary (REDIS_SERVER_BIN or PATH), or undefined if not found. */
export function findRedisServerBinary(): string | undefined {
  const explicit = process.env.REDIS_SERVER_BIN;
  const candidates: string[] = explicit ? [explicit] : [];
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const d of dirs) {
    candidates.push(path.join(d, 'redis-server'));
  }
  for (const c of candidates) {
    try {
      accessSync(c, fsConstants.X_OK);
      return c;
    } catch {
      // try next
    }
  }
  return undefined;
}

/**
 * On a fresh Debian-like machine where we run as root and apt-get exists, install the
 * redis-server package (saying so). Anywhere else, do nothing: the caller explains the options.
 * Set WQ_NO_APT_INSTALL=1 to never do it.
 */
export function installRedisServer(log: (line: string) => void): void {
  if (process.env.WQ_NO_APT_INSTALL === '1' || process.getuid?.() !== 0) return;
  const aptGet = ['/usr/bin/apt-get', '/bin/apt-get'].find((p) => {
    try {
      accessSync(p, fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (!aptGet) return;
  log(
    '[redis] redis-server not found: installing the Debian package with apt-get (running as root)',
  );
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', 'redis-server'],
  ]) {
    const r = spawnSync(aptGet, args, {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 300_000,
    });
    if (r.status !== 0) {
      log(`[redis] apt-get ${args[0]} failed (exit ${r.status ?? r.signal})`);
      return;
    }
  }
}

/** A TCP port that was free a moment ago (ask the OS via listen(0)). */
export function getFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, HOST, () => {
      const addr = srv.address();
      srv.close(() => {
        if (addr && typeof addr === 'object') resolve(addr.port);
        else reject(new Error('could not determine a free port'));
      });
    });
  });
}

/** One inline PING over a raw socket; true iff the server replied +PONG within timeoutMs. */
export function pingOnce(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    let buf = '';
    let done = false;
    const sock = net.createConnection({ host, port });
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    sock.once('connect', () => sock.write('PING\r\n'));
    sock.on('data', (chunk) => {
      buf += chunk.toString('utf8');
      if (buf.includes('\r\n')) finish(buf.startsWith('+PONG'));
    });
    sock.once('error', () => finish(false));
    sock.once('close', () => finish(false));
  });
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off('exit', onExit);
      resolve(false);
    }, timeoutMs);
    const onExit = () => {
      clearTimeout(timer);
      resolve(true);
    };
    child.once('exit', onExit);
  });
}

// Make sure no redis-server outlives the process that started it (crash, forgotten dispose()).
const liveChildren = new Set<ChildProcess>();
const tempDirs = new Set<string>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of liveChildren) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const dir of tempDirs) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // best effort
      }
    }
  });
}

/** Kill `child` if this process exits before it does (also used by redis-cluster.ts). */
export function killOnExit(child: ChildProcess): void {
  liveChildren.add(child);
  child.once('exit', () => liveChildren.delete(child));
  installExitHook();
}

/** Remove `dir` when this process exits, unless `forgetDir(dir)` is called first. */
export function removeOnExit(dir: string): void {
  tempDirs.add(dir);
  installExitHook();
}

export function forgetDir(dir: string): void {
  tempDirs.delete(dir);
}

// ---------------------------------------------------------------------------------------------
// startRedis: a private redis-server process

interface Spawned {
  child: ChildProcess;
  output: () => string;
}

function spawnRedis(bin: string, args: string[]): Spawned {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const collect = (chunk: Buffer) => {
    out += chunk.toString('utf8');
    if (out.length > OUTPUT_LIMIT) out = out.slice(-OUTPUT_LIMIT);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  // spawn errors (ENOENT, EACCES) are reported as 'error' events; keep them in the output.
  child.on('error', (err) => collect(Buffer.from(`\n[spawn error] ${err.message}\n`)));
  killOnExit(child);
  return { child, output: () => out };
}

/** Wait until host:port answers PING, or the process exits, or the deadline passes. */
async function waitReady(
  spawned: Spawned,
  port: number,
  timeoutMs: number,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { child } = spawned;
    if (child.exitCode !== null || child.signalCode !== null) {
      return {
        ok: false,
        reason: `redis-server exited early (code ${child.exitCode}, signal ${child.signalCode})`,
      };
    }
    if (await pingOnce(HOST, port, 250)) return { ok: true };
    if (Date.now() >= deadline) {
      return { ok: false, reason: `redis-server did not answer PING within ${timeoutMs} ms` };
    }
    await delay(25);
  }
}

function buildArgs(port: number, dir: string, opts: StartRedisOptions): string[] {
  const args = [
    '--port',
    String(port),
    '--bind',
    HOST,
    '--protected-mode',
    'no',
    '--daemonize',
    'no',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    opts.appendonly ? 'yes' : 'no',
    '--logfile',
    '',
  ];
  if (opts.appendfsync) args.push('--appendfsync', opts.appendfsync);
  if (opts.extraArgs) args.push(...opts.extraArgs);
  return args;
}

/**
 * Start a private redis-server on 127.0.0.1 (free port, fresh temp dir unless given).
 * Throws RedisUnavailableError if the binary is missing.
 */
export async function startRedis(opts: StartRedisOptions = {}): Promise<RedisHandle> {
  const bin = findRedisServerBinary();
  if (!bin) {
    throw new RedisUnavailableError('redis-server binary not found on PATH (or REDIS_SERVER_BIN).');
  }
  const startTimeoutMs = opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;

  const ownsDir = opts.dir === undefined;
  const dir = opts.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'wq-redis-')));
  if (ownsDir) removeOnExit(dir);

  // A port from listen(0) can be grabbed by someone else before redis binds it (parallel
  // workers): retry with a fresh port a few times. An explicit port is tried once.
  const attempts = opts.port === undefined ? 5 : 1;
  let port = 0;
  let spawned: Spawned | undefined;
  let lastFailure = '';
  for (let i = 0; i < attempts; i++) {
    port = opts.port ?? (await getFreePort());
    const candidate = spawnRedis(bin, buildArgs(port, dir, opts));
    const ready = await waitReady(candidate, port, startTimeoutMs);
    if (ready.ok) {
      spawned = candidate;
      break;
    }
    candidate.child.kill('SIGKILL');
    await waitForExit(candidate.child, STOP_TIMEOUT_MS);
    lastFailure = `${ready.reason}\n--- redis-server output (port ${port}) ---\n${candidate.output()}`;
    if (!/address already in use/i.test(candidate.output())) break;
  }
  if (!spawned) {
    if (ownsDir) {
      await rm(dir, { recursive: true, force: true });
      forgetDir(dir);
    }
    throw new Error(`Could not start ${bin}: ${lastFailure}`);
  }

  let current: Spawned | undefined = spawned;
  let disposed = false;
  const args = buildArgs(port, dir, opts);

  const isRunning = () =>
    current !== undefined && current.child.exitCode === null && current.child.signalCode === null;

  const terminate = async (signal: NodeJS.Signals) => {
    const s = current;
    if (!s) return;
    if (s.child.exitCode === null && s.child.signalCode === null) {
      s.child.kill(signal);
      if (!(await waitForExit(s.child, STOP_TIMEOUT_MS))) {
        s.child.kill('SIGKILL');
        await waitForExit(s.child, STOP_TIMEOUT_MS);
      }
    }
    current = undefined;
  };

  const handle: RedisHandle = {
    url: `redis://${HOST}:${port}`,
    host: HOST,
    port,
    kind: 'binary',
    dir,
    get running() {
      return isRunning();
    },
    stop: () => terminate('SIGTERM'),
    kill: () => terminate('SIGKILL'),
    async restart() {
      if (disposed) throw new Error('restart() after dispose()');
      await terminate('SIGTERM');
      // The old socket may linger briefly; retry until the deadline if the port is still busy.
      const deadline = Date.now() + startTimeoutMs;
      for (;;) {
        const s = spawnRedis(bin, args);
        const ready = await waitReady(s, port, Math.max(deadline - Date.now(), 250));
        if (ready.ok) {
          current = s;
          return;
        }
        s.child.kill('SIGKILL');
        await waitForExit(s.child, STOP_TIMEOUT_MS);
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
      if (ownsDir) {
        await rm(dir, { recursive: true, force: true });
        forgetDir(dir);
      }
    },
  };
  return handle;
}

// ---------------------------------------------------------------------------------------------
// acquireSharedRedis: one Redis for a whole run

/** Quick (≤ ~1 s) check whether a Docker engine answers; never throws. */
export async function dockerEngineReachable(timeoutMs = DOCKER_PROBE_TIMEOUT_MS): Promise<boolean> {
  const dockerHost = process.env.DOCKER_HOST;
  if (dockerHost?.startsWith('tcp://')) {
    const u = new URL(dockerHost.replace(/^tcp:/, 'http:'));
    return tcpConnects(u.hostname, Number(u.port || 2375), timeoutMs);
  }
  if (dockerHost && !dockerHost.startsWith('unix://')) {
    // ssh:// or npipe:// — cannot probe cheaply; let testcontainers try.
    return true;
  }
  const sockets = dockerHost
    ? [dockerHost.slice('unix://'.length)]
    : [
        '/var/run/docker.sock',
        path.join(os.homedir(), '.docker', 'run', 'docker.sock'),
        path.join(os.homedir(), '.docker', 'desktop', 'docker.sock'),
        process.env.XDG_RUNTIME_DIR ? path.join(process.env.XDG_RUNTIME_DIR, 'docker.sock') : '',
      ].filter(Boolean);
  for (const socketPath of sockets) {
    if (await dockerPingUnix(socketPath, timeoutMs)) return true;
  }
  return false;
}

function tcpConnects(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.createConnection({ host, port });
    const timer = setTimeout(() => done(false), timeoutMs);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(ok);
    };
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

function dockerPingUnix(socketPath: string, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ socketPath, path: '/_ping', timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(false));
  });
}

async function pingUrl(url: string, timeoutMs: number): Promise<void> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  let socketError: Error | undefined;
  client.on('error', (err: Error) => {
    socketError = err; // usually more telling than the "Connection is closed." rejection
  });
  try {
    await client.connect();
    const pong = await client.ping();
    if (pong !== 'PONG') throw new Error(`unexpected PING reply: ${String(pong)}`);
  } catch (err) {
    throw socketError ?? err;
  } finally {
    // disconnect() on an already-ended connection would arm a needless 2 s timer (ioredis v6).
    if (client.status !== 'end') client.disconnect();
  }
}

async function startContainer(): Promise<SharedRedis> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer('redis:7')
    .withExposedPorts(6379)
    .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
    .start();
  const url = `redis://${container.getHost()}:${container.getMappedPort(6379)}`;
  return {
    url,
    kind: 'container',
    async dispose() {
      await container.stop();
    },
  };
}

export interface AcquireSharedRedisOptions {
  /** Where to print the one-line "which Redis" notice (default: process.stderr). */
  log?: (line: string) => void;
}

/**
 * One Redis for a whole run: REDIS_URL → Docker (testcontainers) → local redis-server.
 * Throws RedisUnavailableError naming the three options if none works.
 */
export async function acquireSharedRedis(
  options: AcquireSharedRedisOptions = {},
): Promise<SharedRedis> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const problems: string[] = [];

  const envUrl = process.env.REDIS_URL?.trim();
  if (envUrl) {
    try {
      await pingUrl(envUrl, 3_000);
    } catch (err) {
      // REDIS_URL is an explicit choice: do not silently fall back to something else.
      throw new RedisUnavailableError(
        `REDIS_URL is set (${redactUrl(envUrl)}) but that Redis does not answer PING: ${errorMessage(err)}`,
      );
    }
    log(`[redis] using REDIS_URL ${redactUrl(envUrl)}`);
    return { url: envUrl, kind: 'env', dispose: async () => {} };
  }

  if (await dockerEngineReachable()) {
    try {
      const shared = await startContainer();
      log(`[redis] using a testcontainers redis:7 container at ${shared.url}`);
      return shared;
    } catch (err) {
      const problem = `Docker engine found but the redis:7 container failed: ${errorMessage(err)}`;
      problems.push(problem);
      log(`[redis] ${firstLine(problem)}; trying the local redis-server`);
    }
  } else {
    problems.push('no Docker engine reachable');
  }

  if (!findRedisServerBinary()) installRedisServer(log);
  if (findRedisServerBinary()) {
    try {
      const handle = await startRedis();
      log(`[redis] using local redis-server at ${handle.url} (dir ${handle.dir})`);
      return { url: handle.url, kind: 'binary', dispose: () => handle.dispose() };
    } catch (err) {
      problems.push(`local redis-server failed to start: ${errorMessage(err)}`);
    }
  } else {
    problems.push('redis-server binary not found on PATH');
  }

  throw new RedisUnavailableError(
    `No Redis available for the tests: REDIS_URL is not set; ${problems.join('; ')}.`,
  );
}

/** The URL with any password replaced by `***`, for logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? text;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
