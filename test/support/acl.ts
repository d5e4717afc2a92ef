// The minimal ACL of the queue (docs/reliability-and-security.md, Security): its commands, and
// the rules of a user limited to one prefix. Shared by the ACL tests.
import { afterAll, beforeAll } from '@jest/globals';
import { Redis } from 'ioredis';
import { startRedis, type RedisHandle } from './redis-server.js';

/**
 * Every command the queue, its workers (heartbeat thread included), repair, the Nest cleaner and
 * the health indicator send — directly or from their Lua scripts (Redis checks script calls
 * against the user's ACL too). Add `+wait` with `replicaAcks`, and `+client|setinfo` on Redis
 * >= 7.2 to keep ioredis' optional handshake out of the ACL log (its failure is ignored).
 */
export const COMMANDS = [
  // sent by the client
  'evalsha',
  'eval',
  'info',
  'ping',
  'blmove',
  'subscribe',
  'lrange',
  'zrange',
  'hscan',
  'sscan', // repair walks the payload bucket set
  'set', // also by a worker acknowledging a cancel
  'exists', // a canceller checking for an acknowledgement
  'del',
  // run inside the scripts
  'time',
  'hget',
  'hset',
  'hdel',
  'hmget',
  'hexists',
  'incr',
  'incrby',
  'lindex',
  'llen',
  'lpop',
  'lpos',
  'lpush',
  'lrem',
  'rpush',
  'publish', // also by a worker acknowledging a cancel
  'pexpire',
  'sadd',
  'smembers',
  'srem',
  'zadd',
  'zcard',
  'zcount',
  'zrangebyscore',
  'zrem',
  'zscore',
  'xadd', // the event log
  'bitfield', // job times and per-minute counts (docs/history.md)
  'strlen', // a per-minute ring's first write sizes it at once
  'get',
  'setrange', // job times written back per payload bucket
];

/** What obliterate() and drain() need beyond COMMANDS (docs/reliability-and-security.md). */
export const OBLITERATE_COMMANDS = [
  'ltrim',
  'spop',
  'type',
  'hlen',
  'scard',
  'zremrangebyrank',
  'zremrangebyscore',
  'scan',
  'unlink',
];

/** What flows need beyond COMMANDS (docs/reliability-and-security.md, Security). */
export const FLOW_COMMANDS = ['hgetall', 'hkeys', 'hlen', 'rename', 'zrevrangebyscore'];

/**
 * The ACL rules of a user limited to one prefix, with the minimal commands and `more`; with
 * `+client|setinfo` when this Redis has it (>= 7.2: ioredis sends it at connect).
 */
export async function aclRules(
  admin: Redis,
  prefix: string,
  password: string,
  more: readonly string[] = [],
): Promise<string[]> {
  const [setinfo] = (await admin.call('COMMAND', 'INFO', 'client|setinfo')) as unknown[];
  return [
    'on',
    `>${password}`,
    'resetkeys',
    'resetchannels',
    `~${prefix}:*`,
    `&${prefix}:*`,
    '-@all',
    ...[...COMMANDS, ...more].map((c) => `+${c}`),
    ...(setinfo ? ['+client|setinfo'] : []),
  ];
}

/**
 * A redis-server of the test file's own (started before its tests, gone after them): its admin
 * connection, and clients logged in as an ACL user (few retries: a refusal fails fast).
 */
export function aclServer(): { admin(): Redis; asUser(username: string, password: string): Redis } {
  let server: RedisHandle | undefined;
  let admin: Redis | undefined;
  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });
  afterAll(async () => {
    admin?.disconnect();
    await server?.dispose();
  });
  return {
    admin: () => admin!,
    asUser: (username, password) =>
      new Redis({
        host: server!.host,
        port: server!.port,
        username,
        password,
        maxRetriesPerRequest: 2,
      }),
  };
}
