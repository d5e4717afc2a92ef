/**
 * The fault suite's producer (run.ts): adds every planned job of a scenario, paced at its rate,
 * some in bulk, and cancels a share of them a little later.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { errorMessage, RECONNECT_OPTIONS, WorkQueue } from '../../lib/index.js';
import type { FaultJob } from './handler.js';
import type { JobRec } from './records.js';
import { rng, SEED } from './common.js';
import type { Ctx } from './ctx.js';

/** Add every planned job (paced), retrying failed adds of caller-id jobs with the same id. */
export async function produce(ctx: Ctx): Promise<void> {
  const s = ctx.s;
  const r = rng(SEED ^ 0x5eed);
  // Beside Nest worker apps, the producer is such an app too: its client reconnects like the
  // module's (RECONNECT_OPTIONS), so that resume measures the workers, not the producer.
  const client = new Redis(ctx.redis.url, s.worker === 'nest' ? RECONNECT_OPTIONS : {});
  client.on('error', () => undefined);
  const queues = new Map(
    s.queues.map((name) => [name, new WorkQueue<FaultJob>(client, name, ctx.queueOpts())]),
  );
  const plan: JobRec[] = [];
  for (let i = 0; i < s.jobs; i++) {
    const { b, ms } = s.behavior(r, i, s.jobs);
    const delayed = r() < 0.1;
    plan.push({
      queue: s.queues[i % s.queues.length]!,
      k: `${s.id}-${i}`,
      cid: r() < s.cidShare,
      b,
      ms,
      priority: Math.floor(r() * 10),
      delayMs: delayed ? 1 + Math.floor(r() * 1_000) : undefined,
      bulk: false,
      tries: [],
    });
  }
  // Bulk groups: 10 caller-id jobs of one queue at a time.
  const pending = [...plan];
  let inflight = 0;
  const calls: Promise<void>[] = [];
  const t0 = Date.now();
  let sent = 0;
  while (pending.length > 0) {
    const due = t0 + (sent * 1_000) / s.rate;
    const wait = due - Date.now();
    if (wait > 5) await sleep(wait);
    while (inflight >= 300) await sleep(5);
    let group: JobRec[];
    if (r() < s.bulkShare / 10 && pending.length >= 10) {
      group = pending.splice(0, 10);
      for (const j of group) Object.assign(j, { queue: group[0]!.queue, cid: true, bulk: true });
    } else {
      group = [pending.shift()!];
    }
    ctx.jobs.push(...group);
    sent += group.length;
    inflight += 1;
    const q = queues.get(group[0]!.queue)!;
    calls.push(
      addWithRetry(ctx, q, group, r).finally(() => {
        inflight -= 1;
      }),
    );
  }
  await Promise.all(calls);
  await Promise.all(ctx.cancels);
  await client.quit().catch(() => client.disconnect());
}

async function addWithRetry(
  ctx: Ctx,
  q: WorkQueue<FaultJob>,
  group: JobRec[],
  r: () => number,
): Promise<void> {
  const retryUntil = Date.now() + 30_000;
  for (let t = 1; ; t++) {
    const sent = Date.now();
    const entries = group.map((j) => ({
      data: { k: j.k, t, b: j.b, ms: j.ms } satisfies FaultJob,
      opts: { id: j.cid ? j.k : undefined, priority: j.priority, delayMs: j.delayMs },
    }));
    try {
      const res =
        group.length === 1
          ? [await q.add(entries[0]!.data, entries[0]!.opts)]
          : await q.addBulk(entries);
      const settled = Date.now();
      group.forEach((j, i) => {
        j.tries.push({ t, sent, settled, ok: true, added: res[i]!.added, id: res[i]!.id });
        j.ackId = res[i]!.id;
        j.ackAt = settled;
        if (r() < ctx.s.cancelShare) ctx.cancels.push(cancelLater(ctx, q, j, r() * 30));
      });
      return;
    } catch (e) {
      const settled = Date.now();
      for (const j of group) j.tries.push({ t, sent, settled, ok: false, err: errorMessage(e) });
      // Without a caller id a retry could add the job twice: such an add is refused, not retried.
      if (!group.every((j) => j.cid) || Date.now() > retryUntil) return;
      await sleep(Math.min(1_000, 50 * 2 ** t));
    }
  }
}

async function cancelLater(
  ctx: Ctx,
  q: WorkQueue<FaultJob>,
  j: JobRec,
  delayMs: number,
): Promise<void> {
  await sleep(delayMs);
  const sent = Date.now();
  try {
    const result = await q.cancel(j.ackId!);
    j.cancel = { sent, settled: Date.now(), result };
  } catch {
    j.cancel = { sent, settled: Date.now(), result: 'error' };
  }
}
