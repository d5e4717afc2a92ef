/**
 * The deep check: walk the queue incrementally (LRANGE/ZRANGE pages, HSCAN) for jobs that break
 * an invariant (a job with a payload is in exactly one place), and fix each suspect atomically
 * (repair_job.lua re-checks it, so a job that moved meanwhile is left alone). Finds nothing in
 * normal operation.
 */
import type { RepairReport } from '../types/index.js';
import { LEASE_PAD } from '../keys.js';
import { bounded } from '../redis/bounded.js';
import type { QueueContext } from './context.js';
import { str, type Raw } from '../job/records.js';
import type { FlowDelivery } from './flows/delivery.js';
import { repairFlows } from './flows/repair.js';

const PAGE = 1000;

export async function repair(ctx: QueueContext, flows: FlowDelivery): Promise<RepairReport> {
  const raw = ctx.client;
  const t = ctx.options.commandTimeoutMs;
  const at = `queue ${ctx.name}: repair`;
  // Every read of the walk bounded like the scripts.
  const lrange = (k: string, a: number, b: number) =>
    bounded(raw, t, at, () => raw.lrange(k, a, b));
  const zrange = (k: string, a: number, b: number) =>
    bounded(raw, t, at, () => raw.zrange(k, String(a), String(b)));
  const hscanAll = async (key: string, each: (field: string, value: string) => void) => {
    let cursor = '0';
    do {
      const [next, flat] = await bounded(raw, t, at, () => raw.hscan(key, cursor, 'COUNT', PAGE));
      for (let i = 0; i < flat.length; i += 2) each(flat[i]!, flat[i + 1]!);
      cursor = next;
    } while (cursor !== '0');
  };
  const pages = async (
    read: (a: number, b: number) => Promise<string[]>,
    each: (id: string) => void,
  ) => {
    for (let start = 0; ; start += PAGE) {
      const ids = await read(start, start + PAGE - 1);
      ids.forEach(each);
      if (ids.length < PAGE) break;
    }
  };

  const k = ctx.keys;
  const places = new Map<string, number>();
  const mark = (id: string) => places.set(id, (places.get(id) ?? 0) + 1);
  const suspects = new Set<string>();
  const listed: string[] = [];
  for (let p = 0; p <= 9; p++)
    await pages(
      (a, b) => lrange(k.pending(p), a, b),
      (id) => (mark(id), listed.push(id)),
    );
  // Grouped pending jobs, the groups listed one by one (docs/groups.md).
  const groups: string[] = [];
  await pages(
    (a, b) => zrange(k.key('groups'), a, b),
    (g) => groups.push(g),
  );
  for (const g of groups) await pages((a, b) => zrange(k.groupPending(g), a, b), mark);
  const waiting = k.key('waitingChildren');
  // (The leased set's and the lease hash's pad, LEASE_PAD, is not a job.)
  const job = (each: (id: string) => void) => (id: string) => id !== LEASE_PAD && each(id);
  for (const key of [k.delayed, k.leased, k.dead, waiting, k.key('completedJobs')])
    await pages((a, b) => zrange(key, a, b), key === k.leased ? job(mark) : mark);
  const withData = new Set<string>();
  const buckets: string[] = [];
  let cursor = '0';
  do {
    const [next, page] = await bounded(raw, t, at, () =>
      raw.sscan(k.dataBuckets, cursor, 'COUNT', PAGE),
    );
    buckets.push(...page);
    cursor = next;
  } while (cursor !== '0');
  for (const b of new Set(buckets)) {
    await hscanAll(k.dataBucketNamed(b), (id) => {
      withData.add(id);
      if ((places.get(id) ?? 0) !== 1) suspects.add(id);
    });
  }
  for (const id of places.keys()) if (!withData.has(id)) suspects.add(id);
  const leased = new Set<string>();
  await pages(
    (a, b) => zrange(k.leased, a, b),
    job((id) => leased.add(id)),
  );
  const tokens = new Set<string>();
  await hscanAll(k.leaseHolders, (id) => {
    if (id === LEASE_PAD) return;
    tokens.add(id);
    if (!withData.has(id) || !leased.has(id)) suspects.add(id);
  });
  for (const id of leased) if (!tokens.has(id)) suspects.add(id);
  for (const name of ['meta', 'progress', 'completedInfo'] as const) {
    await hscanAll(k.key(name), (id) => {
      if (!withData.has(id)) suspects.add(id);
    });
  }
  const aliases: Array<[string, string]> = [];
  const named: Array<[string, string]> = [];
  await hscanAll(k.key('callerIds'), (cid, id) => {
    // '~<until>[:<seq>]': a completed job's caller id kept for its dedupe window (clean() drops
    // it), or naming the kept completed job (trimmed with it).
    if (id.startsWith('~')) return;
    (withData.has(id) ? named : aliases).push([cid, id]);
  });
  // A job the index names whose metadata has no caller id (its metadata lost: it would run,
  // and complete, under its number).
  const unnamed: Array<[string, string]> = [];
  for (let i = 0; i < named.length; i += PAGE) {
    const page = named.slice(i, i + PAGE);
    const metas = await bounded(raw, t, at, () =>
      raw.hmget(k.key('meta'), ...page.map(([, id]) => id)),
    );
    metas.forEach((m, j) => {
      if (metaCallerId(m) === undefined) unnamed.push(page[j]!);
    });
  }
  // A grouped job waits in its group, never in a pending list (its meta names its group).
  for (let i = 0; i < listed.length; i += PAGE) {
    const ids = listed.slice(i, i + PAGE);
    const metas = await bounded(raw, t, at, () => raw.hmget(k.key('meta'), ...ids));
    metas.forEach((m, j) => {
      if (m?.includes('"g":')) suspects.add(ids[j]!);
    });
  }
  const fixes: string[] = [];
  let tombstones = 0;
  for (const id of suspects) {
    // '' nothing to fix, '~tombstone' a cancelled job's id left in a list, else what was fixed
    const what = str((await ctx.run('repair_job', [id])) as Raw);
    if (what === '~tombstone') tombstones += 1;
    else if (what !== '') fixes.push(`${id}: ${what}`);
  }
  for (const [cid, id] of aliases) {
    if ((await ctx.run('drop_caller_id', [cid, id])) === 1)
      fixes.push(`${cid}: caller id of a missing job`);
  }
  for (const [cid, id] of unnamed) {
    if ((await ctx.run('restore_caller_id', [cid, id])) === 1)
      fixes.push(`${cid}: caller id restored to its job ${id}, whose metadata had none`);
  }
  fixes.push(...(await repairFlows(flows, ctx.name)));
  return { checked: suspects.size + aliases.length + unnamed.length, fixes, tombstones };
}

/** The caller id in a job's metadata (JSON), if any. */
function metaCallerId(m: string | null): string | undefined {
  if (m === null) return undefined;
  try {
    const meta = JSON.parse(m) as { i?: unknown };
    return typeof meta.i === 'string' ? meta.i : undefined;
  } catch {
    return ''; // undecodable: the lease dead-letters it; not ours to rewrite
  }
}
