/**
 * Which connections the heartbeat thread makes with its plain RESP client (no ioredis loaded in
 * the thread) and which keep ioredis there: a standalone Redis with the options the plain client
 * applies (TLS, ACL user, password, db) goes plain; a Cluster, a Sentinel connection, or any
 * option it does not know keeps ioredis.
 */
import { describe, expect, it } from '@jest/globals';
import { Redis, type RedisOptions } from 'ioredis';
import { plainOptions } from '../../lib/worker/heartbeat-thread-connections.js';

/** The options as the thread receives them: a client's resolved options, functions left out. */
function optionsOf(options: RedisOptions): unknown {
  const c = new Redis({ lazyConnect: true, ...options });
  const out = Object.fromEntries(
    Object.entries(c.options).filter(([, v]) => typeof v !== 'function'),
  );
  c.disconnect();
  return out;
}

describe('plainOptions (heartbeat thread)', () => {
  it('a standalone Redis with TLS, an ACL user, a password and a db goes plain', () => {
    expect(plainOptions({ cluster: false, options: optionsOf({}) })).toBe(true);
    const rich = optionsOf({
      host: 'redis.example',
      port: 6380,
      tls: { servername: 'redis.example' },
      username: 'wq',
      password: 'secret',
      db: 3,
      connectionName: 'app',
    });
    expect(plainOptions({ cluster: false, options: rich })).toBe(true);
  });

  it('a Cluster, sentinels, a keyPrefix, a natMap or an unknown option keep ioredis', () => {
    expect(plainOptions({ cluster: true, options: optionsOf({}) })).toBe(false);
    const sentinel = optionsOf({ sentinels: [{ host: 'a', port: 26379 }], name: 'm' });
    expect(plainOptions({ cluster: false, options: sentinel })).toBe(false);
    expect(plainOptions({ cluster: false, options: optionsOf({ keyPrefix: 'x:' }) })).toBe(false);
    expect(plainOptions({ cluster: false, options: optionsOf({ natMap: {} }) })).toBe(false);
    const unknown = { ...(optionsOf({}) as object), somethingNew: 1 };
    expect(plainOptions({ cluster: false, options: unknown })).toBe(false);
    expect(plainOptions({ cluster: false, options: { tls: true } })).toBe(false);
  });
});
