/**
 * Make the only worker on a private Redis deaf: its notice connection (the one pub/sub
 * connection) is killed, and we wait until nobody listens on the queue's notice channel (a notice
 * sent now is lost; it reconnects after its client's retryStrategy).
 */
import { expect } from '@jest/globals';
import type { PrivateRedis } from './private-redis.js';
import { waitFor } from './wait.js';

/** How many connections listen on `channel`. */
export async function subscribers(redis: PrivateRedis, channel: string): Promise<number> {
  return Number(((await redis.admin.pubsub('NUMSUB', channel)) as [string, number])[1]);
}

export async function deafen(redis: PrivateRedis, noticeChannel: string): Promise<void> {
  await waitFor(async () => (await subscribers(redis, noticeChannel)) === 1, {
    what: 'the worker subscribed',
  });
  const list = String(await redis.admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
  const ids = [...list.matchAll(/\bid=(\d+)/g)].map((m) => m[1]!);
  expect(ids).toHaveLength(1);
  await redis.admin.call('CLIENT', 'KILL', 'ID', ids[0]!);
  await waitFor(async () => (await subscribers(redis, noticeChannel)) === 0, {
    what: 'the worker deaf',
  });
}
