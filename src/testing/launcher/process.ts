/**
 * `launchRedisServer()`: a private `redis-server` on 127.0.0.1 (a free port, a fresh temp dir, no
 * persistence) that answers PING before it is handed out, stopped on `dispose()` — and never
 * outlives the process that started it (an exit, a signal, SIGKILL: see guard()), nor keeps it
 * alive.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  DEFAULT_START_TIMEOUT_MS,
  delay,
  findRedisServerBinary,
  getFreePort,
  HOST,
  pingOnce,
  RedisUnavailableError,
  STOP_TIMEOUT_MS,
  waitForExit,
} from './common.js';

const OUTPUT_LIMIT = 64 * 1024;

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

/** A redis-server process and the tail of what it printed. */
export interface RedisProcess {
  child: ChildProcess;
  output: () => string;
}

/**
 * A guard of `child`: a shell that waits on a pipe from this process and, when the pipe closes —
 * this process ended in any way, a signal (to it or its group) or SIGKILL included, which no
 * 'exit' hook sees — kills the child (and removes `dir`, if given). It is killed when the child
 * exits first (its pid then names nothing of ours). Neither it nor the pipe keeps this process
 * alive. Not on Windows.
 */
function guard(child: ChildProcess, ownProcessGroup: boolean, dir?: string): void {
  if (process.platform === 'win32' || child.pid === undefined) return;
  // It ignores the signals a process group gets (a closed terminal, Ctrl-C, a CI job's end),
  // which end this process too: it outlives it to clean up (redis-server ignores SIGHUP).
  const script = `trap '' HUP INT TERM; read -r _; kill -9 "$0" 2>/dev/null${dir ? '; rm -rf "$1"' : ''}`;
  const g = spawn('/bin/sh', ['-c', script, String(child.pid), ...(dir ? [dir] : [])], {
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: ownProcessGroup,
  });
  g.on('error', () => undefined); // no shell: the 'exit' hook alone
  (g.stdin as (NodeJS.WritableStream & { unref?(): void }) | null)?.unref?.();
  g.unref();
  child.once('exit', () => g.kill('SIGKILL'));
}

/**
 * Spawn `bin args`, collecting its output. It never outlives this process (killed by the 'exit'
 * hook, and by its guard when this process ends by a signal), nor keeps it alive: a forgotten
 * stop lets it exit. `ownProcessGroup`: see LaunchRedisOptions; `dir`: removed with it when this
 * process ends by a signal (the caller's temp dir).
 */
export function spawnRedisServer(
  bin: string,
  args: string[],
  ownProcessGroup = false,
  dir?: string,
): RedisProcess {
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: ownProcessGroup });
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
  guard(child, ownProcessGroup, dir);
  child.unref();
  for (const pipe of [child.stdout, child.stderr]) (pipe as { unref?(): void } | null)?.unref?.();
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
  /**
   * Start it in a process group of its own (default: false, this process's group). A signal sent
   * to this process's group (Ctrl-C in a terminal) then does not stop it under a caller that is
   * still shutting down; the caller stops it with `dispose()`, and it is still killed when this
   * process ends.
   */
  ownProcessGroup?: boolean;
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
    const proc = spawnRedisServer(bin, args, opts.ownProcessGroup, ownsDir ? dir : undefined);
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
