/**
 * Leases by reference (WorkerCallOptions.byRef, lib/worker/lease-loop.ts): the lease script
 * replies without the payloads of large jobs and they are read here, behind the call.
 */
import { redisError } from '../errors.js';
import { BATCH_HEAD, BATCH_IDS, str, type Reply } from '../job/records.js';
import { bounded } from '../redis/bounded.js';
import type { QueueContext } from './context.js';

/**
 * The payloads of a lease by reference (WorkerCallOptions.byRef), into `reply` in place of its
 * '' entries: one HMGET per payload bucket, sent together. A payload gone meanwhile (its job
 * cancelled between the call and the read) is null: decodeBatch leaves that job out. Read as
 * Buffers whatever the codec, decoded by decodeBatch: large payload strings made by ioredis
 * (inside its socket reads) survive the young generation's collections — most of them were
 * moved to the old space, ~1.5x the worker's GC time per 10 KB job — ones made there do not.
 */
export async function readPayloads(ctx: QueueContext, reply: Reply): Promise<void> {
  const { client, keys, options } = ctx;
  const ids = str(reply[BATCH_IDS]).split(' ');
  const buckets = new Map<string, { seqs: string[]; at: number[] }>();
  for (let j = 0, i = BATCH_HEAD; i < reply.length; j += 3, i += 2) {
    const seq = ids[j] ?? '';
    const key = keys.dataBucket(seq);
    let b = buckets.get(key);
    if (!b) buckets.set(key, (b = { seqs: [], at: [] }));
    b.seqs.push(seq);
    b.at.push(i);
  }
  const context = `queue ${ctx.name}: lease payloads`;
  const all = [...buckets];
  let got: Array<Array<Buffer | null>>;
  try {
    got = await bounded(client, options.commandTimeoutMs, context, () =>
      Promise.all(all.map(([key, b]) => client.hmgetBuffer(key, ...b.seqs))),
    );
  } catch (e) {
    throw redisError(context, e);
  }
  all.forEach(([, b], k) => b.at.forEach((i, n) => (reply[i] = got[k]![n] ?? null)));
}
