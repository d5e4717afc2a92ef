/**
 * A private redis-server for one test file, for tests that see every connection of it (CLIENT
 * KILL, CLIENT LIST, pub/sub counts): started before the file's tests; its clients closed and
 * the server gone after them.
 */
import { afterAll, beforeAll } from '@jest/globals';
import { Redis, type RedisOptions } from 'ioredis';
import { startRedis, type RedisHandle, type StartRedisOptions } from './redis-server.js';

export interface PrivateRedis {
  readonly url: string;
  /** The test's own connection (not one of `client()`'s). */
  readonly admin: Redis;
  /**
   * A client with `options`, of class `Client` (its connection errors ignored: tests drop
   * connections).
   */
  client(options?: RedisOptions, Client?: typeof Redis): Redis;
}

export function privateRedis(opts: StartRedisOptions = {}): PrivateRedis {
  let handle: RedisHandle | undefined;
  let admin: Redis | undefined;
  const clients: Redis[] = [];
  beforeAll(async () => {
    handle = await startRedis(opts);
    admin = new Redis(handle.url);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
    admin?.disconnect();
    await handle?.dispose();
  });
  const started = (): RedisHandle => {
    if (!handle) throw new Error('privateRedis: used before its beforeAll ran');
    return handle;
  };
  return {
    get url() {
      return started().url;
    },
    get admin() {
      started();
      return admin!;
    },
    client(options: RedisOptions = {}, Client = Redis) {
      const c = new Client(started().url, options);
      c.on('error', () => undefined);
      clients.push(c);
      return c;
    },
  };
}
