/**
 * The Redis launcher: the one home of the code that finds or starts a Redis for tests and local
 * runs. `startTestRedis()` (nestjs-work-queue/testing) is built on it, and so are the project's
 * own test harness (test/support/redis-server.ts, test/support/global-setup.cts) and `npm start`
 * (sample/start.ts, through tools/redis-server.ts).
 *
 * No relative imports (node builtins and ioredis only), so that it also loads as CommonJS
 * without a resolver that maps `./x.js` to `./x.ts` (Jest's globalSetup requires it).
 * `testcontainers` is an optional peer: imported dynamically, only when a Docker engine answers.
 *
 * - `launchRedisServer()` starts a private `redis-server` on 127.0.0.1 (a free port, a fresh
 *   temp dir, no persistence), waits until it answers PING, and stops it on `dispose()`.
 * - `acquireSharedRedis()` picks ONE Redis: `REDIS_URL` if set, else a Docker engine via
 *   testcontainers (only if one is reachable), else the local `redis-server` binary.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';

export interface SharedRedis {
  url: string;
  kind: 'env' | 'container' | 'binary';
  dispose(): Promise<void>;
}

export const HOST = '127.0.0.1';
export const DEFAULT_START_TIMEOUT_MS = 5_000;
export const STOP_TIMEOUT_MS = 10_000;
const DOCKER_PROBE_TIMEOUT_MS = 1_000;
const OUTPUT_LIMIT = 64 * 1024;

/** The three ways to get a Redis, named by every "no Redis" error. */
export const HOW_TO_GET_REDIS = [
  'Options:',
  '  1. set REDIS_URL to a Redis you run yourself (e.g. REDIS_URL=redis://127.0.0.1:6379),',
  '  2. run a Docker engine so testcontainers can start redis:7 (npm install -D testcontainers), or',
  '  3. install the redis-server binary (Debian/Ubuntu: apt-get install redis-server).',
].join('\n');

export class RedisUnavailableError extends Error {
  override readonly name = 'RedisUnavailableError';
  constructor(
    message: string,
    /** What was tried and why it did not give a Redis, one entry each. */
    readonly problems: readonly string[] = [],
  ) {
    super(`${message}\n${HOW_TO_GET_REDIS}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Binary lookup and small helpers

/** The first of `candidates` that is an executable file, or undefined. */
export function firstExecutable(candidates: readonly string[]): string | undefined {
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

/** Path of the redis-server binary (REDIS_SERVER_BIN or PATH), or undefined if not found. */
export function findRedisServerBinary(): string | undefined {
  const explicit = process.env.REDIS_SERVER_BIN;
  const candidates: string[] = explicit ? [explicit] : [];
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter(Boolean);
  for (const d of dirs) {
    candidates.push(path.join(d, 'redis-server'));
  }
  return firstExecutable(candidates);
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

export const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Wait up to `timeoutMs` for `child` to exit; true iff it has. */
export function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
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

/** Kill `child` if this process exits before it does. */
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
// launchRedisServer: a private redis-server process

/** A redis-server process and the tail of what it printed. */
export interface RedisProcess {
  child: ChildProcess;
  output: () => string;
}

/** Spawn `bin args` (killed if this process exits first), collecting its output. */
export function spawnRedisServer(bin: string, args: string[]): RedisProcess {
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

export function isRunning(proc: RedisProcess | undefined): proc is RedisProcess {
  return proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null;
}

/** Wait until HOST:port answers PING, or the process exits, or the deadline passes. */
export async function waitReady(
  proc: RedisProcess,
  port: number,
  timeoutMs: number,
): Promise<{ ok: true } | { ok: false; reason: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { child } = proc;
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

/** Send `signal` and wait for the exit (SIGKILL if it takes over STOP_TIMEOUT_MS). */
export async function stopRedisProcess(
  proc: RedisProcess,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (!isRunning(proc)) return;
  proc.child.kill(signal);
  if (!(await waitForExit(proc.child, STOP_TIMEOUT_MS))) {
    proc.child.kill('SIGKILL');
    await waitForExit(proc.child, STOP_TIMEOUT_MS);
  }
}

/** redis-server arguments: `HOST:port`, data in `dir`, no persistence, log to stdout; then `extra`. */
export function redisServerArgs(
  port: number,
  dir: string,
  extra: readonly string[] = [],
): string[] {
  return [
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
    'no',
    '--logfile',
    '',
    ...extra,
  ];
}

export interface LaunchRedisOptions {
  /** Extra redis-server arguments, after the defaults (a later one wins), e.g. `['--maxmemory', '10mb']`. */
  args?: readonly string[];
  /** Port to listen on (default: a free port). */
  port?: number;
  /** Data directory (default: a fresh temp dir, removed by `dispose()`). */
  dir?: string;
  /** How long to wait for the server to answer PING (default: 5000 ms). */
  startTimeoutMs?: number;
}

export interface LaunchedRedis {
  url: string;
  host: string;
  port: number;
  /** Data directory of the server. */
  dir: string;
  /** The binary and full argument list it was started with (to start it again). */
  bin: string;
  args: string[];
  /** The process started by `launchRedisServer`. */
  process: RedisProcess;
  /** Stop the process (if still running) and remove the temp dir (only if created here). */
  dispose(): Promise<void>;
}

/**
 * Start a private redis-server on 127.0.0.1 (free port, fresh temp dir unless given) and wait
 * until it answers PING. Throws RedisUnavailableError if the binary is missing.
 */
export async function launchRedisServer(opts: LaunchRedisOptions = {}): Promise<LaunchedRedis> {
  const bin = findRedisServerBinary();
  if (!bin) {
    throw new RedisUnavailableError('redis-server binary not found on PATH (or REDIS_SERVER_BIN).');
  }
  const startTimeoutMs = opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;

  const ownsDir = opts.dir === undefined;
  const dir = opts.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'wq-redis-')));
  if (ownsDir) removeOnExit(dir);
  const removeDir = async () => {
    if (!ownsDir) return;
    await rm(dir, { recursive: true, force: true });
    forgetDir(dir);
  };

  // A port from listen(0) can be grabbed by someone else before redis binds it (parallel
  // workers): retry with a fresh port a few times. An explicit port is tried once.
  const attempts = opts.port === undefined ? 5 : 1;
  let lastFailure = '';
  for (let i = 0; i < attempts; i++) {
    const port = opts.port ?? (await getFreePort());
    const args = redisServerArgs(port, dir, opts.args);
    const proc = spawnRedisServer(bin, args);
    const ready = await waitReady(proc, port, startTimeoutMs);
    if (ready.ok) {
      let disposed = false;
      return {
        url: `redis://${HOST}:${port}`,
        host: HOST,
        port,
        dir,
        bin,
        args,
        process: proc,
        async dispose() {
          if (disposed) return;
          disposed = true;
          await stopRedisProcess(proc);
          await removeDir();
        },
      };
    }
    proc.child.kill('SIGKILL');
    await waitForExit(proc.child, STOP_TIMEOUT_MS);
    lastFailure = `${ready.reason}\n--- redis-server output (port ${port}) ---\n${proc.output()}`;
    if (!/address already in use/i.test(proc.output())) break;
  }
  await removeDir();
  throw new Error(`Could not start ${bin}: ${lastFailure}`);
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
  let testcontainers: typeof import('testcontainers');
  try {
    testcontainers = await import('testcontainers');
  } catch (err) {
    throw new Error(`the testcontainers package is not installed (${errorMessage(err)})`, {
      cause: err,
    });
  }
  const { GenericContainer, Wait } = testcontainers;
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
  /**
   * Called when the redis-server binary is missing, before giving up: a chance to install it
   * (the project's own runs do, with apt-get; the package never installs anything).
   */
  install?: (log: (line: string) => void) => void;
}

/**
 * One Redis: REDIS_URL → Docker (testcontainers) → local redis-server. Throws
 * RedisUnavailableError naming the three options if none works.
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
      const problem = `REDIS_URL is set (${redactUrl(envUrl)}) but that Redis does not answer PING: ${errorMessage(err)}`;
      throw new RedisUnavailableError(problem, [problem]);
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

  if (!findRedisServerBinary()) options.install?.(log);
  if (findRedisServerBinary()) {
    try {
      const server = await launchRedisServer();
      log(`[redis] using local redis-server at ${server.url} (dir ${server.dir})`);
      return { url: server.url, kind: 'binary', dispose: () => server.dispose() };
    } catch (err) {
      problems.push(`local redis-server failed to start: ${errorMessage(err)}`);
    }
  } else {
    problems.push('redis-server binary not found on PATH');
  }

  problems.unshift('REDIS_URL is not set');
  throw new RedisUnavailableError(`No Redis available: ${problems.join('; ')}.`, problems);
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
