import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Redis } from 'ioredis';
import { deleteKeys, keysMatching, testRedisUrl, uniqueName } from '../../support/keys.js';
import { pingOnce, startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';

/** A client that fails fast instead of retrying forever (so a dead server shows up as an error). */
function fastFailClient(url: string): Redis {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  client.on('error', () => {
    // errors are asserted through command results
  });
  return client;
}

function tcpConnectFails(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.createConnection({ host: '127.0.0.1', port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(false);
    });
    sock.once('error', () => resolve(true));
  });
}

describe('shared Redis (globalSetup)', () => {
  let redis: Redis;

  beforeAll(async () => {
    redis = fastFailClient(testRedisUrl());
    await redis.connect();
  });

  afterAll(async () => {
    await redis.quit();
  });

  it('is exported to the test worker and answers PING', async () => {
    expect(process.env.WQ_TEST_REDIS_URL).toMatch(/^rediss?:\/\//);
    expect(await redis.ping()).toBe('PONG');
  });

  it('uniqueName() gives distinct prefixed names', () => {
    const names = new Set(Array.from({ length: 100 }, () => uniqueName('job')));
    expect(names.size).toBe(100);
    for (const n of names) expect(n).toMatch(/^job-[0-9a-f]{8}$/);
    expect(uniqueName()).toMatch(/^q-[0-9a-f]{8}$/);
  });

  it('keysMatching() finds all keys via SCAN and deleteKeys() removes exactly them', async () => {
    const ns = uniqueName('harness');
    const other = uniqueName('harness');
    const keys = Array.from({ length: 2_500 }, (_, i) => `${ns}:k:${i}`);
    const pipeline = redis.pipeline();
    for (const k of keys) pipeline.set(k, '1');
    pipeline.set(`${other}:k:0`, '1');
    await pipeline.exec();

    const found = await keysMatching(redis, `${ns}:*`);
    expect(found).toEqual([...keys].sort());

    expect(await deleteKeys(redis, `${ns}:*`)).toBe(keys.length);
    expect(await keysMatching(redis, `${ns}:*`)).toEqual([]);
    expect(await redis.exists(`${other}:k:0`)).toBe(1);
    await deleteKeys(redis, `${other}:*`);
  });
});

describe('startRedis() private server', () => {
  const handles: RedisHandle[] = [];
  const clients: Redis[] = [];

  async function start(...args: Parameters<typeof startRedis>): Promise<RedisHandle> {
    const h = await startRedis(...args);
    handles.push(h);
    return h;
  }

  function client(url: string): Redis {
    const c = fastFailClient(url);
    clients.push(c);
    return c;
  }

  afterEach(async () => {
    // ioredis v6: disconnect() on an already-closed connection arms a 2 s timer that is never
    // cleared (it waits for a 'close' that already happened), which keeps Jest alive.
    for (const c of clients.splice(0)) if (c.status !== 'end') c.disconnect();
    for (const h of handles.splice(0)) await h.dispose();
  });

  it('starts a working server on a free port with its own temp dir', async () => {
    const h = await start();
    expect(h.kind).toBe('binary');
    expect(h.host).toBe('127.0.0.1');
    expect(h.url).toBe(`redis://127.0.0.1:${h.port}`);
    expect(h.running).toBe(true);
    expect(existsSync(h.dir)).toBe(true);
    expect(h.port).not.toBe(Number(new URL(testRedisUrl()).port));

    const c = client(h.url);
    await c.connect();
    await c.set('hello', 'world');
    expect(await c.get('hello')).toBe('world');
    expect(await c.config('GET', 'appendonly')).toEqual(['appendonly', 'no']);
  });

  it('two servers are independent', async () => {
    const [a, b] = await Promise.all([start(), start()]);
    expect(a.port).not.toBe(b.port);
    expect(a.dir).not.toBe(b.dir);
    const ca = client(a.url);
    const cb = client(b.url);
    await Promise.all([ca.connect(), cb.connect()]);
    await ca.set('only-in-a', '1');
    expect(await cb.exists('only-in-a')).toBe(0);
  });

  it('kill() makes connections fail; restart() brings it back on the same port with AOF data', async () => {
    const h = await start({ appendonly: true, appendfsync: 'always' });
    const port = h.port;
    const c1 = client(h.url);
    await c1.connect();
    expect(await c1.config('GET', 'appendfsync')).toEqual(['appendfsync', 'always']);
    await c1.set('durable', 'yes');

    await h.kill();
    expect(h.running).toBe(false);
    await waitFor(() => c1.status === 'end' || c1.status === 'close', {
      what: 'existing client to notice the kill',
    });
    await expect(c1.get('durable')).rejects.toThrow();
    expect(await tcpConnectFails(port)).toBe(true);
    expect(await pingOnce('127.0.0.1', port)).toBe(false);
    const c2 = client(h.url);
    await expect(c2.connect()).rejects.toThrow();

    await h.restart();
    expect(h.running).toBe(true);
    expect(h.port).toBe(port);
    expect(h.url).toBe(`redis://127.0.0.1:${port}`);
    const c3 = client(h.url);
    await c3.connect();
    expect(await c3.get('durable')).toBe('yes');
  });

  it('stop() shuts down gracefully and restart() works after it', async () => {
    const h = await start();
    await h.stop();
    expect(h.running).toBe(false);
    expect(await tcpConnectFails(h.port)).toBe(true);
    await h.stop(); // idempotent
    await h.restart();
    expect(await pingOnce(h.host, h.port)).toBe(true);
  });

  it('passes extraArgs through', async () => {
    const h = await start({ extraArgs: ['--maxmemory', '12mb'] });
    const c = client(h.url);
    await c.connect();
    expect(await c.config('GET', 'maxmemory')).toEqual(['maxmemory', String(12 * 1024 * 1024)]);
  });

  it('dispose() stops the server and removes the temp dir', async () => {
    const h = await startRedis({ appendonly: true });
    const { dir, port } = h;
    expect(existsSync(dir)).toBe(true);
    await h.dispose();
    expect(h.running).toBe(false);
    expect(existsSync(dir)).toBe(false);
    expect(await tcpConnectFails(port)).toBe(true);
    await h.dispose(); // idempotent
    await expect(h.restart()).rejects.toThrow(/dispose/);
  });
});

describe('a private redis-server never outlives the process that started it', () => {
  /** Run test/fixtures/launcher-child.ts `mode`; its server's port and dir, once it exited. */
  async function child(mode: string): Promise<{ port: number; dir: string; code: number | null }> {
    const root = path.resolve('.');
    const p = spawn(
      process.execPath,
      ['--import', './scripts/register-ts.mjs', 'test/fixtures/launcher-child.ts', mode],
      // (A group leader for the group-* modes: their signal reaches its group, not ours.)
      { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], detached: mode.startsWith('group-') },
    );
    let out = '';
    p.stdout.on('data', (b: Buffer) => (out += b.toString()));
    // (Bounded: one that does not exit by itself is killed, and says so by its code.)
    const timer = setTimeout(() => p.kill('SIGKILL'), 10_000);
    const code = await new Promise<number | null>((resolve) => p.once('exit', resolve));
    clearTimeout(timer);
    const started = JSON.parse(out.split('\n')[0]!) as { port: number; dir: string };
    return { ...started, code };
  }

  it.each(['sigkill', 'sigterm', 'forget', 'group-SIGHUP', 'group-SIGINT', 'group-SIGTERM'])(
    '%s: the server and its temp dir go',
    async (mode) => {
      const { port, dir, code } = await child(mode); // ('forget': it exited by itself)
      if (mode === 'forget') expect(code).toBe(0);
      await waitFor(() => tcpConnectFails(port), { what: `the server on port ${port} gone` });
      await waitFor(() => !existsSync(dir), { what: `its temp dir ${dir} removed` });
    },
    30_000,
  );
});
