/**
 * `npm start` (sample/start.ts) as a user runs it: it starts a private redis-server (no
 * REDIS_URL) and the app serves. A Ctrl-C (SIGINT to the terminal's foreground process group)
 * shuts the app down cleanly — its Redis is still there while the workers close — and then stops
 * that Redis; so does the end of its parent (npm and its shell exit on a SIGTERM without passing
 * it on), or of a SIGKILL of start.ts itself. The app itself (sample/main.ts) refuses a bad PORT,
 * and one it cannot listen on closes its workers (started at bootstrap) before it exits.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { createServer } from 'node:net';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { WorkQueue } from '../../lib/index.js';
import { EMAILS } from '../../sample/emails.js';
import { getFreePort, pingOnce } from '../../src/testing/redis-launcher.js';
import { startRedis } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const START = ['--import', './scripts/register-ts.mjs', 'sample/start.ts'];

interface Started {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** What start.ts and the app printed so far. */
  out: () => string;
  /** Whether every process that holds our output pipes (start.ts, the app) has exited. */
  ended: () => boolean;
  port: number;
  redisPort: number;
}

/**
 * `bin args` in a process group of its own, as a terminal makes for the command it runs;
 * resolves once the app listens.
 */
async function start(bin: string, args: string[]): Promise<Started> {
  const port = await getFreePort();
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), LOG_LEVEL: '' };
  // The private redis-server it starts (no REDIS_URL; a Docker engine, if any, not reachable).
  delete env.REDIS_URL;
  env.DOCKER_HOST = 'tcp://127.0.0.1:1';
  const child = spawn(bin, args, {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let closed = 0;
  for (const stream of [child.stdout, child.stderr]) {
    stream.on('data', (c: Buffer) => (out += c.toString()));
    stream.on('close', () => closed++);
  }
  const ended = () => closed === 2;
  await waitFor(() => out.includes(`listening on http://localhost:${port}`) || ended(), {
    what: 'the sample to listen',
    timeoutMs: 60_000,
  });
  expect(ended()).toBe(false);
  const redisPort = Number(/local redis-server at redis:\/\/127\.0\.0\.1:(\d+)/.exec(out)?.[1]);
  expect(redisPort).toBeGreaterThan(0);
  expect((await fetch(`http://127.0.0.1:${port}/health`)).status).toBe(200);
  return { child, out: () => out, ended, port, redisPort };
}

/** After a test: whatever is left of it goes (start.ts stops its Redis, out of the group). */
async function cleanup(s: Started | undefined): Promise<void> {
  if (!s || s.ended()) return;
  s.child.kill('SIGTERM');
  process.kill(-s.child.pid!, 'SIGTERM');
  await waitFor(s.ended, { what: 'npm start to stop', timeoutMs: 30_000 }).catch(() =>
    process.kill(-s.child.pid!, 'SIGKILL'),
  );
}

/** The app closed against a live Redis ("no reply" nor any other error), then its Redis went. */
async function stoppedCleanly(s: Started): Promise<void> {
  await waitFor(s.ended, { what: 'npm start to exit', timeoutMs: 30_000 });
  expect(s.out()).not.toMatch(/ERROR|Error|no reply/);
  expect(await pingOnce('127.0.0.1', s.redisPort)).toBe(false);
}

describe('npm start', () => {
  it('serves on its own Redis; a Ctrl-C stops the app cleanly, then its Redis', async () => {
    let s: Started | undefined;
    try {
      s = await start(process.execPath, START);
      const exit = new Promise<number | null>((r) => s!.child.once('exit', (code) => r(code)));
      // Ctrl-C: SIGINT to every process of the group.
      process.kill(-s.child.pid!, 'SIGINT');
      await stoppedCleanly(s);
      expect(await exit).toBe(0);
    } finally {
      await cleanup(s);
    }
  }, 120_000);

  it('its parent gone without a word (npm and its shell killed): the app stops cleanly, then its Redis', async () => {
    let s: Started | undefined;
    try {
      // (`; :`: the shell stays start.ts's parent, as npm's does.)
      s = await start('sh', ['-c', `node ${START.join(' ')}; :`]);
      s.child.kill('SIGKILL');
      await stoppedCleanly(s);
    } finally {
      await cleanup(s);
    }
  }, 120_000);

  it('start.ts killed (SIGKILL): the app it started stops too', async () => {
    let s: Started | undefined;
    try {
      s = await start(process.execPath, START);
      s.child.kill('SIGKILL');
      await waitFor(s.ended, { what: 'the app to stop', timeoutMs: 30_000 });
    } finally {
      await cleanup(s);
    }
  }, 120_000);
});

describe('sample/main.ts', () => {
  /** The app run directly on `redisUrl` with PORT `port`: its exit code and output. */
  const run = (redisUrl: string, port: string) =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const env = { ...process.env, REDIS_URL: redisUrl, PORT: port, LOG_LEVEL: '' };
      const app = spawn(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', 'sample/main.ts'],
        {
          cwd: root,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      app.stdout.on('data', (c: Buffer) => (out += c.toString()));
      app.stderr.on('data', (c: Buffer) => (out += c.toString()));
      const killer = setTimeout(() => app.kill('SIGKILL'), 60_000);
      app.on('exit', (code) => (clearTimeout(killer), resolve({ code, out })));
    });

  it('a bad PORT, or one taken: a clear error, exit 1, and no worker left registered', async () => {
    const redis = await startRedis();
    const busy = createServer();
    const client = new Redis(redis.url);
    try {
      const bad = await run(redis.url, 'abc');
      expect(bad.code).toBe(1);
      expect(bad.out).toContain('PORT must be a port number 0-65535, got "abc"');
      await new Promise<void>((r) => busy.listen(0, '::', r));
      const port = (busy.address() as { port: number }).port;
      const taken = await run(redis.url, String(port));
      expect(taken.code).toBe(1);
      expect(taken.out).toContain(`cannot listen on port ${port}`);
      // Its workers had started (bootstrap comes before the listen): they left on the way out.
      expect((await new WorkQueue(client, EMAILS).counts()).workers).toBe(0);
    } finally {
      busy.close();
      client.disconnect();
      await redis.dispose();
    }
  }, 120_000);
});
