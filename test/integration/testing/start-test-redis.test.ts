// startTestRedis (nestjs-work-queue/testing): REDIS_URL when set, else Docker, else a local
// redis-server; and the one error naming the three when none is there.
import { execFileSync } from 'node:child_process';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { WorkQueueError } from '../../../lib/index.js';
import { startTestRedis, type TestRedis } from '../../../src/testing/index.js';
import { errorOf } from '../../support/core.js';
import { testRedisUrl } from '../../support/keys.js';
import { getFreePort, pingOnce } from '../../support/redis-server.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const ENV_KEYS = ['REDIS_URL', 'DOCKER_HOST', 'REDIS_SERVER_BIN'] as const;
let savedEnv: Partial<Record<(typeof ENV_KEYS)[number], string>>;
const started: TestRedis[] = [];

beforeEach(async () => {
  savedEnv = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  // No Docker for these tests, wherever they run: a TCP Docker host on a port nothing serves.
  process.env.DOCKER_HOST = `tcp://127.0.0.1:${await getFreePort()}`;
});

afterEach(async () => {
  await Promise.all(started.splice(0).map((r) => r.stop()));
  for (const k of ENV_KEYS) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

async function start(options?: Parameters<typeof startTestRedis>[0]): Promise<TestRedis> {
  const redis = await startTestRedis(options);
  started.push(redis);
  return redis;
}

const portOf = (url: string) => Number(new URL(url).port);

describe('startTestRedis', () => {
  it("uses REDIS_URL when set, and its stop() leaves that Redis running (it is the user's)", async () => {
    const url = testRedisUrl();
    process.env.REDIS_URL = url;
    const lines: string[] = [];
    const redis = await start({ log: (line) => lines.push(line) });
    expect(redis).toMatchObject({ url, kind: 'env' });
    expect(lines).toEqual([`[redis] using REDIS_URL ${new URL(url).toString()}`]);
    await redis.stop();
    await redis.stop();
    expect(await pingOnce('127.0.0.1', portOf(url))).toBe(true);
  });

  it('without REDIS_URL or Docker, starts a local redis-server on a free port; stop() stops it, once', async () => {
    delete process.env.REDIS_URL;
    const a = await start();
    const b = await start();
    expect(a.kind).toBe('binary');
    expect(a.url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(b.url).not.toBe(a.url);
    expect(await pingOnce('127.0.0.1', portOf(a.url))).toBe(true);
    const [first, second] = [a.stop(), a.stop()];
    expect(second).toBe(first);
    await first;
    expect(await pingOnce('127.0.0.1', portOf(a.url))).toBe(false);
    expect(await pingOnce('127.0.0.1', portOf(b.url))).toBe(true);
  });

  it('fails with REDIS_UNAVAILABLE when REDIS_URL does not answer, without falling back', async () => {
    process.env.REDIS_URL = `redis://127.0.0.1:${await getFreePort()}`;
    const e = await errorOf(startTestRedis());
    expect(e).toBeInstanceOf(WorkQueueError);
    expect((e as WorkQueueError).code).toBe('REDIS_UNAVAILABLE');
    expect((e as WorkQueueError).problems).toHaveLength(1);
    expect((e as Error).message).toContain('REDIS_URL is set');
    expect((e as Error).message).toContain('does not answer PING');
  });

  it('fails with REDIS_UNAVAILABLE, not a hang, when REDIS_URL accepts the connection and never answers', async () => {
    // (The connect timeout covers the socket only: a stopped Redis, or a port that is not Redis,
    // left startTestRedis pending for good.)
    const sockets: Socket[] = [];
    const silent = createServer((socket) => void sockets.push(socket)); // accepts, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      process.env.REDIS_URL = `redis://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const e = await errorOf(startTestRedis());
      expect(e).toMatchObject({ code: 'REDIS_UNAVAILABLE' });
      expect((e as Error).message).toContain('no answer within 3000 ms');
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it('refuses bad options with every problem listed', async () => {
    const e = await errorOf(startTestRedis({ log: 'loud', image: 'redis:8' } as never));
    expect(e).toBeInstanceOf(WorkQueueError);
    expect((e as WorkQueueError).code).toBe('INVALID_ARGUMENT');
    expect((e as WorkQueueError).problems).toEqual([
      'unknown option "image" (known: log)',
      'options.log must be a function (line: string) => void, got "loud"',
    ]);
  });

  it('with none of the three (no REDIS_URL, no Docker, no redis-server on PATH): one error naming all three', () => {
    // A child process whose PATH has no redis-server (an empty directory), as a user's machine.
    const emptyDir = mkdtempSync(join(tmpdir(), 'wq-no-redis-'));
    try {
      const code = [
        "const { startTestRedis } = await import('./src/testing/index.ts');",
        'try { await startTestRedis(); console.log("started"); }',
        'catch (e) { console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message, problems: e.problems })); }',
      ].join('\n');
      const env: NodeJS.ProcessEnv = {
        PATH: emptyDir,
        HOME: emptyDir,
        DOCKER_HOST: process.env.DOCKER_HOST,
      };
      const out = execFileSync(
        process.execPath,
        ['--import', './scripts/register-ts.mjs', '--input-type=module', '-e', code],
        { cwd: root, env, encoding: 'utf8', timeout: 60_000 },
      );
      const e = JSON.parse(out.trim().split('\n').pop()!) as {
        name: string;
        code: string;
        message: string;
        problems: string[];
      };
      expect(e).toMatchObject({ name: 'WorkQueueError', code: 'REDIS_UNAVAILABLE' });
      expect(e.problems).toEqual([
        'REDIS_URL is not set',
        'no Docker engine reachable',
        'redis-server binary not found on PATH',
      ]);
      expect(e.message).toContain('1. set REDIS_URL to a Redis you run yourself');
      expect(e.message).toContain('2. run a Docker engine so testcontainers can start redis:7');
      expect(e.message).toContain('3. install the redis-server binary');
    } finally {
      rmSync(emptyDir, { recursive: true, force: true });
    }
  });
});
