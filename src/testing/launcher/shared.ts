/**
 * `acquireSharedRedis()`: ONE Redis for a whole run — `REDIS_URL` if set, else a Docker engine via
 * testcontainers (an optional peer, imported only when an engine answers), else the local
 * `redis-server` binary.
 */
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { within } from '../../../lib/internal.js';
import {
  errorMessage,
  findRedisServerBinary,
  firstLine,
  redactUrl,
  RedisUnavailableError,
  type SharedRedis,
} from './common.js';
import { launchRedisServer } from './process.js';

const DOCKER_PROBE_TIMEOUT_MS = 1_000;

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
    // Bounded whole: connectTimeout covers the socket only, not a server that accepts it and
    // never answers (a stopped process, a port that is not Redis).
    const pong = await within(
      client.connect().then(() => client.ping()),
      timeoutMs,
      () => {
        throw new Error(`no answer within ${timeoutMs} ms`);
      },
    );
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
  /** A local redis-server's process group: see LaunchRedisOptions.ownProcessGroup. */
  ownProcessGroup?: boolean;
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
      const server = await launchRedisServer({ ownProcessGroup: options.ownProcessGroup });
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
