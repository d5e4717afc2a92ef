/**
 * The core's own connections (lib/redis/connection.ts) copy the caller's client, Cluster or not —
 * also a Cluster made by another copy of ioredis than ours (an app with two ioredis versions in
 * node_modules), which `instanceof` would take for a plain client. No connection is opened.
 */
import { describe, expect, it } from '@jest/globals';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { duplicate, isCluster, subscriber } from '../../lib/redis/connection.js';

/** A Cluster client as another copy of ioredis makes it: not an instance of our Cluster class. */
function foreignCluster(redisOptions: Partial<RedisOptions>) {
  const made: unknown[][] = [];
  const cluster = {
    isCluster: true,
    options: { redisOptions },
    duplicate(...args: unknown[]) {
      made.push(args);
      return { isCluster: true, madeBy: 'duplicate' };
    },
  };
  return { cluster: cluster as unknown as Cluster, made };
}

describe('connections the core opens', () => {
  it('takes a Cluster from another copy of ioredis for a Cluster, and duplicates it as one', () => {
    const { cluster, made } = foreignCluster({ password: 'p', connectionName: 'app' });
    expect(cluster instanceof Cluster).toBe(false);
    expect(isCluster(cluster)).toBe(true);
    expect(duplicate(cluster, { autoResubscribe: false })).toEqual({
      isCluster: true,
      madeBy: 'duplicate',
    });
    // Its nodes' options, with the override for each connection.
    expect(made).toEqual([
      [
        undefined,
        { redisOptions: { password: 'p', connectionName: 'app', autoResubscribe: false } },
      ],
    ]);
    // A Cluster's subscriber resubscribes on its own: no override.
    subscriber(cluster);
    expect(made[1]).toEqual([
      undefined,
      { redisOptions: { password: 'p', connectionName: 'app' } },
    ]);
  });

  it('duplicates a plain client with its options, its subscriber without autoResubscribe', () => {
    const client = new Redis({ lazyConnect: true, connectionName: 'app', db: 3 });
    expect(isCluster(client)).toBe(false);
    const sub = subscriber(client) as Redis;
    const copy = duplicate(client) as Redis;
    try {
      expect(sub).toBeInstanceOf(Redis);
      expect(sub.options).toMatchObject({ connectionName: 'app', db: 3, autoResubscribe: false });
      expect(copy.options).toMatchObject({ connectionName: 'app', db: 3, autoResubscribe: true });
    } finally {
      for (const c of [client, sub, copy]) c.disconnect();
    }
  });
});
