/**
 * obliterate() and flows (docs/flows.md): before the queue's keys go, each of its flow jobs ends as
 * if cancelled — a child's parent (in another queue) learns it, with its `onFailure` applied; a
 * parent's children (in other queues) are cancelled — so that nothing waits for what is gone.
 */
import { redisError } from '../../errors.js';
import { bounded } from '../../redis/bounded.js';
import { flushQuietly, type FlowDelivery } from './delivery.js';

const PAGE = 1000;

/** Detach every flow job of `queue` (HSCAN of its meta), then deliver what that wrote. */
export async function detachFlows(d: FlowDelivery, queue: string): Promise<boolean> {
  const r = d.runner;
  const key = r.keysOf(queue).key('meta');
  const at = `queue ${queue}: obliterate (flows)`;
  let cursor = '0';
  let any = false;
  try {
    do {
      const [next, flat] = await bounded(r.client, r.options.commandTimeoutMs, at, () =>
        r.client.hscan(key, cursor, 'COUNT', PAGE),
      );
      cursor = next;
      const seqs: string[] = [];
      for (let i = 0; i + 1 < flat.length; i += 2) {
        if (/"[PW]":/.test(flat[i + 1]!)) seqs.push(flat[i]!);
      }
      if (seqs.length > 0) {
        any = true;
        const reason = 'cancelled (queue obliterated)';
        await r.run(queue, 'flow_cancel', ['detach', reason, seqs.length, ...seqs]);
      }
    } while (cursor !== '0');
  } catch (e) {
    throw redisError(at, e);
  }
  if (any) await flushQuietly(d, { name: queue }, 'now');
  return any;
}
