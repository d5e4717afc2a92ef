/** What the fault suite checks after a scenario drained: Redis state, dead entries, results. */
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage, WorkQueue } from '../../lib/index.js';
import { parseEntry } from '../../lib/events/parse.js';
import { keysMatching } from '../support/keys.js';
import { allPayloads, payloadCount } from '../support/payloads.js';
import type { Analysis } from './analyze.js';
import { readLogs } from './logs.js';
import { say } from './common.js';
import type { Ctx } from './ctx.js';

export async function drain(ctx: Ctx): Promise<boolean> {
  const queues = ctx.s.queues.map((name) => new WorkQueue(ctx.admin, name, ctx.queueOpts()));
  const deadline = Date.now() + ctx.s.drainTimeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    let busy = 0;
    const parts: string[] = [];
    try {
      for (const q of queues) {
        const c = await q.counts();
        // Pending lists may hold entries of cancelled jobs (tombstones) until a lease skips them:
        // count live payloads instead (dead and kept completed jobs keep theirs).
        const live = (await payloadCount(ctx.admin, q.keys)) - c.dead - c.completed;
        busy += live + c.leased + c.delayed;
        parts.push(
          `${q.name}: live ${live} leased ${c.leased} delayed ${c.delayed} dead ${c.dead}`,
        );
      }
    } catch (e) {
      // Redis restarted by the scenario may still be loading its data: ask again (bounded).
      busy += 1;
      parts.push(`no answer: ${errorMessage(e)}`);
    }
    if (busy === 0) return true;
    const line = parts.join('; ');
    if (line !== last && Math.random() < 0.05) say(`${ctx.s.id}: draining: ${line}`);
    last = line;
    await sleep(200);
  }
  return false;
}

export async function deadEntries(ctx: Ctx) {
  const out: Array<{ queue: string; id: string; reason: string }> = [];
  for (const name of ctx.s.queues) {
    const q = new WorkQueue(ctx.admin, name, ctx.queueOpts());
    for (let offset = 0; ; offset += 1_000) {
      const page = await q.listDead({ offset, limit: 1_000 });
      for (const d of page) out.push({ queue: name, id: d.id, reason: d.reason });
      if (page.length < 1_000) break;
    }
  }
  return out;
}

export async function resultKeys(ctx: Ctx): Promise<Set<string>> {
  const out = new Set<string>();
  for (const name of ctx.s.queues) {
    const q = new WorkQueue(ctx.admin, name, ctx.queueOpts());
    for (const id of await ctx.admin.hkeys(q.keys.key('results'))) out.add(`${name}\t${id}`);
  }
  return out;
}

// The counters, the heartbeat record and the event log (a capped stream, kept by design).
const FINISHED_OK = new Set(['id', 'tok', 'wseq', 'hb', 'es']);
/**
 * Keys a finished queue keeps for a while besides its counters: caller ids of completed jobs
 * within their dedupe window (`ix`, and `~<until>` values in `ids`), and each producer's record
 * of its add calls (`ik:<session>`, expiring within a minute), cancel acknowledgements
 * (`ca:<id>`, a minute), cancel calls' answers (`cc:<id>`) and the acknowledgement ids of
 * cancelled leases (`cx:<token>`, a minute or commandTimeoutMs), workers' registrations
 * (`wr:<token>`, a minute or until the worker leaves: a killed one's stays), the per-minute
 * counts (`mt:<kind>`, a day), workers reclaimed while parked (`rw`, until the last one's
 * parked-until).
 */
const keptForAWhile = (k: string) =>
  k === 'ix' || k === 'ids' || k === 'rw' || /^(ik|ca|cc|cx|wr|mt):/.test(k);

/**
 * Keys of the jobs a finished queue keeps (docs/history.md): the kept completed jobs (`cj`, `ci`)
 * and, with the dead ones, their payload buckets and time buckets (`d:<b>`, `db`, `t:<b>`, checked
 * against the bucket set below) and logs (`lg:<seq>`, `lg:<seq>:d`).
 */
const jobKeys = (k: string) => k === 'cj' || k === 'ci' || k === 'db' || /^(d|t|lg):/.test(k);

/**
 * `live`: workers still run, the queue is drained. `closed`: every worker closed gracefully.
 * repair() finds nothing; the only keys are counters, the registry (live), the dead-letter set
 * and its jobs' data/meta/caller ids, the Nest cleaner's guard.
 */
export async function endChecks(ctx: Ctx, phase: 'live' | 'closed'): Promise<void> {
  const c = ctx.admin;
  for (const name of ctx.s.queues) {
    const q = new WorkQueue(c, name, ctx.queueOpts());
    const rep = await q.repair();
    if (rep.fixes.length > 0)
      ctx.violation(
        `${phase}: repair() fixed ${rep.fixes.length}: ${rep.fixes.slice(0, 5).join(' | ')}`,
      );
    if (rep.tombstones > 0 && phase === 'live')
      ctx.note(`${name}: repair dropped ${rep.tombstones} tombstone(s) of cancelled jobs`);
    // A worker's lease set can still name jobs that finished elsewhere (reclaimed and completed
    // by another worker, leased by a call whose reply was lost): its next heartbeat drops them;
    // a wake-up pushed by the last calls waits for an idle worker. Give them (beats every
    // heartbeatTimeoutMs / 4: 750 ms at most here) a few beats.
    for (let i = 0; phase === 'live' && i < 30; i++) {
      const left = await keysMatching(c, q.keys.workerLeases('*'));
      if (left.length === 0 && (await c.exists(q.keys.wake)) === 0) break;
      await sleep(100);
    }
    const keys = (await keysMatching(c, `${q.keys.base}*`)).map((k) => k.slice(q.keys.base.length));
    const allowed = new Set([...FINISHED_OK, 'dead', 'd', 'm', 'ids', 'cleaner', 'pg']);
    // Stored results (opt-in, with a TTL) are not keys of unfinished jobs.
    if (ctx.s.storeResults) allowed.add('res').add('rx');
    // Registered and parked workers, and what getWorkers() shows of them.
    if (phase === 'live') allowed.add('w').add('pk').add('wi');
    // A worker's hand-off list lives from its idle wait's pop to its next call.
    // Payload buckets (d:<b>) and their set (db) hold dead and kept jobs' payloads; checked below.
    const extra = keys.filter(
      (k) =>
        !allowed.has(k) &&
        !keptForAWhile(k) &&
        !jobKeys(k) &&
        !(phase === 'live' && k.startsWith('hx:')),
    );
    const buckets = keys.filter((k) => k.startsWith('d:')).map((k) => k.slice(2));
    const registered = await c.smembers(q.keys.dataBuckets);
    if (buckets.sort().join() !== registered.sort().join())
      ctx.violation(
        `${phase}: ${name}: payload buckets ${buckets.join(',')} but the set says ${registered.join(',')}`,
      );
    // A time bucket goes with its payload bucket.
    const times = keys.filter((k) => k.startsWith('t:')).map((k) => k.slice(2));
    const orphans = times.filter((b) => !buckets.includes(b));
    if (orphans.length > 0)
      ctx.violation(`${phase}: ${name}: time buckets without payloads: ${orphans.join(',')}`);
    for (const k of extra) {
      const type = await c.type(q.keys.base + k);
      const members =
        type === 'set' ? (await c.smembers(q.keys.base + k)).slice(0, 8).join(',') : type;
      ctx.violation(`${phase}: ${name}: unexpected key ${k} (${members})`);
    }
    // What a finished queue holds of its jobs: the dead ones and the kept completed ones.
    const deadIds = new Set(await c.zrange(q.keys.dead, '0', '-1'));
    const keptIds = new Set(await c.zrange(q.keys.key('completedJobs'), '0', '-1'));
    const held = (id: string) => deadIds.has(id) || keptIds.has(id);
    const dataIds = Object.keys(await allPayloads(c, q.keys));
    const metaIds = await c.hkeys(q.keys.key('meta'));
    const progressIds = await c.hkeys(q.keys.key('progress'));
    const aliasIds = (await c.hvals(q.keys.key('callerIds'))).filter((v) => !v.startsWith('~'));
    const logIds = keys.filter((k) => k.startsWith('lg:')).map((k) => k.split(':')[1]!);
    const stray = [...dataIds, ...metaIds, ...progressIds, ...aliasIds, ...logIds].filter(
      (id) => !held(id),
    );
    if (stray.length > 0)
      ctx.violation(
        `${phase}: ${name}: data of finished jobs left: ${stray.slice(0, 10).join(',')}`,
      );
    await keptChecks(ctx, q, phase, new Set(dataIds));
    if (phase === 'closed') {
      const workers = await c.zrange(q.keys.workers, '0', '-1');
      if (workers.length > 0)
        ctx.violation(`closed: ${name}: workers still registered: ${workers.join(',')}`);
    }
  }
}

export async function purgeAndCheck(ctx: Ctx): Promise<void> {
  const c = ctx.admin;
  for (const name of ctx.s.queues) {
    const q = new WorkQueue(c, name, ctx.queueOpts());
    await q.purgeDead();
    await q.purgeCompleted();
    const keys = (await keysMatching(c, `${q.keys.base}*`)).map((k) => k.slice(q.keys.base.length));
    const results = ctx.s.storeResults ? ['res', 'rx'] : [];
    const extra = keys.filter(
      (k) => !FINISHED_OK.has(k) && !keptForAWhile(k) && k !== 'cleaner' && !results.includes(k),
    );
    if (extra.length > 0)
      ctx.violation(`after purgeDead: ${name}: keys left besides counters: ${extra.join(', ')}`);
  }
}

/**
 * Every completed job of the run is kept (within keepCompleted's count) or trimmed, never both:
 * a kept one has its payload, its info and its times (added ≤ started ≤ finished, in the run's
 * time: they survive a Redis restart with AOF); a completed job the logs name that is not kept
 * has nothing left (its payload: `stray` above). The dead ones have their times too.
 */
async function keptChecks(
  ctx: Ctx,
  q: WorkQueue,
  phase: 'live' | 'closed',
  withData: ReadonlySet<string>,
): Promise<void> {
  const c = ctx.admin;
  const name = q.name;
  const seqs = await c.zrange(q.keys.key('completedJobs'), '0', '-1');
  const infos = new Set(await c.hkeys(q.keys.key('completedInfo')));
  const bound = q.options.keepCompleted.count;
  if (seqs.length > bound)
    ctx.violation(`${phase}: ${name}: ${seqs.length} kept completed jobs, over the bound ${bound}`);
  const half = seqs.filter((s) => !withData.has(s) || !infos.has(s));
  if (half.length > 0 || infos.size !== seqs.length)
    ctx.violation(
      `${phase}: ${name}: kept and trimmed at once (payload or info missing): ${half.slice(0, 10).join(',')}`,
    );
  // Times of the kept and the dead jobs: present, in order, within the run (Redis and this
  // process share a clock here; a second of slack for the rounding of either).
  const from = ctx.startedAt - 1_000;
  const [s, us] = await c.time();
  const to = Number(s) * 1000 + Math.floor(Number(us) / 1000);
  const bad: string[] = [];
  const inRun = (id: string, ...t: Array<number | undefined>) => {
    const ok = t.every((x, i) => x !== undefined && x >= (i === 0 ? from : t[i - 1]!) && x <= to);
    if (!ok) bad.push(`${id} ${t.join('/')}`);
  };
  const kept: string[] = [];
  for (let offset = 0; ; offset += 1_000) {
    const page = await q.getJobs('completed', { offset, limit: 1_000 });
    for (const j of page) {
      kept.push(j.id);
      inRun(j.id, j.addedAt, j.startedAt, j.finishedAt);
    }
    if (page.length < 1_000) break;
  }
  for (let offset = 0; ; offset += 1_000) {
    const page = await q.listDead({ offset, limit: 1_000 });
    for (const d of page) inRun(d.id, d.addedAt, d.startedAt, d.diedAt);
    if (page.length < 1_000) break;
  }
  if (bad.length > 0)
    ctx.violation(
      `${phase}: ${name}: times missing or out of order: ${bad.slice(0, 5).join('; ')}`,
    );
  if (phase !== 'closed') return;
  // Each kept job is a job of this run (added, run, or completed according to the logs).
  const logs = readLogs(ctx.logDir);
  const known = new Set([
    ...ctx.jobs.filter((j) => j.queue === name && j.ackId).map((j) => j.ackId!),
    ...[...logs.execs, ...logs.dones].filter((e) => e.queue === name).map((e) => e.id),
  ]);
  const foreign = kept.filter((id) => !known.has(id));
  if (foreign.length > 0)
    ctx.violation(
      `closed: ${name}: kept jobs the run never made: ${foreign.slice(0, 10).join(',')}`,
    );
  const completed = new Set(logs.dones.filter((d) => d.queue === name).map((d) => d.id));
  ctx.note(
    `${name}: ${completed.size} completed, ${kept.length} kept (bound ${bound}), ${Math.max(0, completed.size - kept.length)} trimmed`,
  );
}

export function reportEverysec(ctx: Ctx, a: Analysis): void {
  const kills = ctx.redisKills;
  ctx.note(
    `REPORT appendfsync everysec: ${a.lost} acknowledged job(s) missing at the end ` +
      `(${a.vanished.length} never ran), ${a.dupCompletions} completed twice, ${ctx.faults.length} Redis SIGKILLs`,
  );
  ctx.note(
    '  why: a SIGKILL of redis-server loses only what Redis had not yet write()n to the AOF. With ' +
      'everysec Redis writes the AOF buffer before it replies, except while the previous ' +
      "second's background fsync is still running (then it may hold writes up to 2 s): data " +
      'written but not fsynced sits in the OS page cache and survives a process kill. An OS ' +
      'crash or power loss loses what was not fsynced: up to ~1 s of acknowledged writes (2 s ' +
      'with a stalled disk). appendfsync always fsyncs before replying.',
  );
  for (const j of a.vanished.slice(0, 10)) {
    const before = kills.filter((k) => k >= j.ackAt!).map((k) => k - j.ackAt!);
    ctx.note(`  lost ${j.queue}/${j.ackId}: acknowledged ${before[0] ?? '?'} ms before a SIGKILL`);
  }
  // Report only: what was lost is not an invariant violation here.
  ctx.violations.splice(
    0,
    ctx.violations.length,
    ...ctx.violations.filter((v) => !/LOST|completed \d+ times|complete returned false/.test(v)),
  );
}

/**
 * Jobs the queues' event logs say were reclaimed from a worker judged dead (its heartbeat
 * lapsed), as far as the capped logs still reach back. In a scenario where no worker process
 * dies, each is a live worker judged dead: after a Redis restart, its beats came back later than
 * its heartbeat timeout allowed.
 */
export async function reclaimedFromDead(ctx: Ctx): Promise<number> {
  let n = 0;
  for (const name of ctx.s.queues) {
    const q = new WorkQueue(ctx.admin, name, ctx.queueOpts());
    for (const [id, fields] of await ctx.admin.xrange(q.keys.eventLog, '-', '+'))
      for (const e of parseEntry(id, fields))
        if (e.kind === 'reclaimed' && e.reason === 'worker died') n += 1;
  }
  return n;
}
