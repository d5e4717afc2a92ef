/**
 * What a flow parent's children left it (docs/flows.md): how many ended how (getJob, getBatch),
 * their results and the errors of failed ones (the handler's `job.getChildrenResults()`), read
 * from the parent's own keys (`flowParent`), in its queue's slot.
 */
import type { Cluster, Redis } from 'ioredis';
import { redisError } from '../../errors.js';
import type { QueueKeys } from '../../redis/queue-keys.js';
import { bounded } from '../../redis/bounded.js';
import type { ChildCounts } from '../../types/index.js';

interface Reader {
  readonly client: Redis | Cluster;
  readonly options: { readonly commandTimeoutMs: number };
  keysOf(queue: string): QueueKeys;
}

/** The child counts of parent `seq` of `queue`. */
export async function readChildCounts(r: Reader, queue: string, seq: string): Promise<ChildCounts> {
  return (await readManyChildCounts(r, queue, [seq]))[0]!;
}

/** Parent `seq`'s children's results (JSON, decoded) or failures, by child key. */
export async function readChildren(
  r: Reader,
  queue: string,
  seq: string,
  kind: 'results' | 'failures',
): Promise<Record<string, unknown>> {
  const at = `queue ${queue}: children ${kind} of ${seq}`;
  const key = r.keysOf(queue).parentKey(kind, seq);
  let flat: Record<string, string>;
  try {
    flat = await bounded(r.client, r.options.commandTimeoutMs, at, () => r.client.hgetall(key));
  } catch (e) {
    throw redisError(at, e);
  }
  return kind === 'failures' ? flat : decodeResults(flat);
}

/** Results as stored (JSON) decoded; one that is not JSON (written by hand) as stored. */
export function decodeResults(flat: Record<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(flat)) {
    try {
      out[k] = JSON.parse(v) as unknown;
    } catch {
      out[k] = v;
    }
  }
  return out;
}

/** The child counts of each of parents `seqs` of `queue` (one round trip). */
export async function readManyChildCounts(
  r: Reader,
  queue: string,
  seqs: readonly string[],
): Promise<ChildCounts[]> {
  if (seqs.length === 0) return [];
  const k = r.keysOf(queue);
  const at = `queue ${queue}: children`;
  const kinds = ['awaited', 'results', 'failures', 'cancelled'] as const;
  try {
    const res = await bounded(r.client, r.options.commandTimeoutMs, at, () => {
      const p = r.client.pipeline();
      for (const seq of seqs) for (const kind of kinds) p.hlen(k.parentKey(kind, seq));
      return p.exec();
    });
    const n = (i: number): number => {
      const [err, v] = res?.[i] ?? [new Error('no reply'), 0];
      if (err) throw err;
      return Number(v);
    };
    return seqs.map((_, j) => ({
      pending: n(4 * j),
      completed: n(4 * j + 1),
      failed: n(4 * j + 2),
      cancelled: n(4 * j + 3),
    }));
  } catch (e) {
    throw redisError(at, e);
  }
}
