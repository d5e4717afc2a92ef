/**
 * repair() for flows (docs/internals/flows.md): deliver everything the queue has left over, then
 * walk its parents waiting for children (pages by score) and ask each child's queue whether the child
 * still exists or its notice still waits there (flow_probe.lua). A child that is neither ended
 * without its notice reaching the parent (a failover lost it, or Redis was written by hand): its
 * parent learns it as failed (its policy applies), so that no parent waits forever.
 */
import { bounded } from '../../redis/bounded.js';
import type { ScriptArgs } from '../../scripts/define.js';
import type { FlowDelivery } from './delivery.js';

const PAGE = 1000;
const LOST = 'ended without its notice reaching the parent (found by repair)';

/** Fixes made, one line per child given up on. */
export async function repairFlows(d: FlowDelivery, queue: string): Promise<string[]> {
  const r = d.runner;
  const at = `queue ${queue}: repair`;
  const ms = r.options.commandTimeoutMs;
  const fixes: string[] = [];
  await d.flush(queue, 'all');
  const k = r.keysOf(queue);
  // Pages by score (each parent's own seq), not by rank: a parent fixed here leaves the set,
  // and a page by rank after it skipped as many waiting parents. Each is looked at once.
  const seen = new Set<string>();
  // Child queues where a kept child's notice was written again: delivered before repair ends.
  const rewritten = new Set<string>();
  let from = '-inf';
  for (;;) {
    const flat = await bounded(r.client, ms, at, () =>
      r.client.zrange(
        k.key('waitingChildren'),
        from,
        '+inf',
        'BYSCORE',
        'LIMIT',
        0,
        PAGE,
        'WITHSCORES',
      ),
    );
    const parents: string[] = [];
    let last = from;
    for (let i = 0; i < flat.length; i += 2) {
      const seq = flat[i]!;
      if (!seen.has(seq)) parents.push(seq);
      seen.add(seq);
      last = flat[i + 1]!;
    }
    for (const seq of parents) {
      const awaited = await bounded(r.client, ms, at, () =>
        r.client.hkeys(k.parentKey('awaited', seq)),
      );
      const byQueue = new Map<string, string[]>();
      for (const child of awaited) {
        const m = /^(.*):(\d+)$/.exec(child);
        if (m) byQueue.set(m[1]!, [...(byQueue.get(m[1]!) ?? []), m[2]!]);
      }
      for (const [cq, seqs] of byQueue) {
        // per seq 1 exists or its notice waits, 2 its notice written again (kept), 0 lost
        const there = (await r.run(cq, 'flow_probe', [seqs.length, ...seqs])) as number[];
        if (there.includes(2)) rewritten.add(cq);
        const lost = seqs.filter((_, i) => there[i] === 0);
        if (lost.length === 0) continue;
        const args: ScriptArgs['flow_notice'] = [cq, lost.length];
        for (const s of lost) args.push(s, `f\t${queue}\t${seq}\t${LOST}`);
        await r.run(queue, 'flow_notice', args);
        for (const s of lost) fixes.push(`${seq}: child ${cq}:${s} ${LOST}: counted as failed`);
      }
    }
    if (flat.length < 2 * PAGE) break;
    // From the last score on (parents scored before by the ms they were added in may share
    // one), or past it when the whole page was of parents seen already.
    from = parents.length > 0 ? last : `(${last}`;
  }
  for (const cq of rewritten) await d.flush(cq, 'all');
  if (fixes.length > 0) await d.flush(queue, 'now');
  return fixes;
}
