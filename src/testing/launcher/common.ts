/**
 * The Redis launcher's shared parts: what a "no Redis" error says, the binary lookup, a free port,
 * a raw-socket PING, and small helpers. The launcher is the one home of the code that finds or
 * starts a Redis for tests and local runs (see ../redis-launcher.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

export interface SharedRedis {
  url: string;
  kind: 'env' | 'container' | 'binary';
  dispose(): Promise<void>;
}

export const HOST = '127.0.0.1';
export const DEFAULT_START_TIMEOUT_MS = 5_000;
export const STOP_TIMEOUT_MS = 10_000;

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

/** The URL with any password replaced by `***`, for logs (lib's). */
export { redactUrl } from '../../../lib/internal.js';

export function firstLine(text: string): string {
  return text.split('\n', 1)[0] ?? text;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
