// Direct access to the payload buckets (lib/scripts/lib/data.lua) for tests that look at or
// tamper with Redis behind the queue's back.
import type { Redis } from 'ioredis';
import { dataBucketOf } from '../../lib/keys.js';
import type { QueueKeys } from '../../lib/redis/queue-keys.js';

type Client = Pick<Redis, 'smembers' | 'hgetall' | 'hset' | 'sadd'>;

/** Every stored payload of a queue: id -> payload. */
export async function allPayloads(c: Client, keys: QueueKeys): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const b of (await c.smembers(keys.dataBuckets)).sort()) {
    Object.assign(out, await c.hgetall(keys.dataBucketNamed(b)));
  }
  return out;
}

/** How many payloads a queue stores. */
export async function payloadCount(c: Client, keys: QueueKeys): Promise<number> {
  return Object.keys(await allPayloads(c, keys)).length;
}

/** Write a payload as the scripts would (its bucket, registered in the bucket set). */
export async function putPayload(
  c: Client,
  keys: QueueKeys,
  id: string,
  payload: string | Buffer,
): Promise<void> {
  await c.hset(keys.dataBucket(id), id, payload);
  await c.sadd(keys.dataBuckets, dataBucketOf(id));
}
