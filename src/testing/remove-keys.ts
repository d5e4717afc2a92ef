// removeKeys(): delete every key of a prefix (SCAN + UNLINK), after a test.
import type { Cluster, Redis } from 'ioredis';
import { checkPrefix, describe, invalidArgument } from './checks.js';

const SCAN_COUNT = 1_000;

/**
 * Deletes every key under `prefix` (`<prefix>:{*`: every queue of that prefix, and not those of
 * a longer prefix that starts with it, e.g. `<prefix>:other`) and resolves how many there were. Uses SCAN (never KEYS) and UNLINK; on a Cluster, every master. For the
 * throwaway prefix of a test (`uniquePrefix()`): it deletes whatever is there, jobs included, so
 * close the workers of that prefix first.
 */
export async function removeKeys(client: Redis | Cluster, prefix: string): Promise<number> {
  const problems: string[] = [];
  if (typeof client !== 'object' || client === null || typeof client.scan !== 'function') {
    problems.push(`client must be an ioredis Redis or Cluster, got ${describe(client)}`);
  }
  checkPrefix('prefix', prefix, problems);
  if (problems.length > 0) throw invalidArgument('removeKeys', problems);

  const nodes: Redis[] = client.isCluster ? (client as Cluster).nodes('master') : [client as Redis];
  const removed = await Promise.all(nodes.map((node) => removeOn(node, `${prefix}:{*`)));
  return removed.reduce((a, b) => a + b, 0);
}

async function removeOn(node: Redis, pattern: string): Promise<number> {
  let removed = 0;
  let cursor = '0';
  do {
    const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
    cursor = next;
    if (keys.length === 0) continue;
    // One UNLINK per key: on a Cluster node the keys found may belong to different slots.
    const pipeline = node.pipeline();
    for (const key of keys) pipeline.unlink(key);
    for (const [err, n] of (await pipeline.exec()) ?? []) {
      if (err) throw err;
      removed += Number(n);
    }
  } while (cursor !== '0');
  return removed;
}
