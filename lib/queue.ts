import { randomBytes } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { bounded } from './bounded.js';
import { CancelAcks } from './cancel-acks.js';
import { errorMessage, invalid, redisError, scriptError, WorkQueueError } from './errors.js';
import { queueKeys, type QueueKeys } from './keys.js';
import {
  backoffDelay,
  checkBackoff,
  resolveQueueOptions,
  type ResolvedQueueOptions,
} from './options.js';
import { defineScripts, type ScriptClient, type ScriptName } from './scripts.js';
import type {
  AddOptions,
  AddResult,
  BackoffOptions,
  CleanReport,
  DeadJob,
  FailOutcome,
  JobInfo,
  Lease,
  LeasedJob,
  LeaseOptions,
  QueueCounts,
  RepairReport,
  WorkQueueOptions,
} from './types.js';

type Arg = string | number | Buffer;
type PipelineScript = (...args: Arg[]) => unknown;
type Raw = string | Buffer;
type Reply = Array<Raw | number>;

/** Meta fields as stored in Redis (see lib/scripts/_common.lua). */
interface Meta {
  i?: string;
  n?: string;
  p?: number;
  a?: number;
  m?: number;
  b?: BackoffOptions;
  x?: number;
  e?: string;
  r?: string;
}

interface AckItem {
  args: Arg[];
  resolve(reply: unknown): void;
  reject(e: unknown): void;
  /** Past it, a refused script is no longer sent again. */
  deadline: number;
  tries: number;
}

/** One batch of leased jobs plus what a worker needs to wait well. */
export interface LeaseBatch<T> {
  jobs: LeasedJob<T>[];
  /** Redis time when the batch was leased. */
  now: number;
  /** When the next delayed job is due (Redis ms), -1 when none, 0 when not looked up (full batch). */
  nextDue: number;
  /**
   * A suspect job (its last worker died while it ran beside others) waits to run alone: the
   * worker should finish what it holds, lease nothing meanwhile, then lease again.
   */
  drain: boolean;
}

export interface CompleteItem<R = unknown> {
  lease: Lease;
  result?: R;
}

/** What a Worker adds to `completeAndLease` (see lib/scripts/complete.lua). */
export interface WorkerCallOptions {
  /** Mark the worker parked for this long when the lease comes back short (0: do not). */
  parkMs?: number;
  /** Hand-off leases popped from the wake list by `waitForWork`, to take over first. */
  adopt?: readonly Lease[];
  /** The worker's idle wait moved entries into its hand-off list since its last call. */
  sweep?: boolean;
  /** Lease length of adopted jobs when nothing is leased in the same call. */
  leaseMs?: number;
}

const ADD_CHUNK = 2000;
/** Add calls whose records one add call deletes at most (the rest go with the next). */
const MAX_ACKS_PER_ADD = 1000;
const ADD_OPTION_KEYS: ReadonlySet<string> = new Set<keyof AddOptions>([
  'id',
  'name',
  'priority',
  'delayMs',
  'runAt',
  'maxAttempts',
  'backoff',
]);
/** What a BullMQ habit is called here (unknown `add` options are refused, never ignored). */
const BULLMQ_HINTS: Readonly<Record<string, string>> = {
  jobId: "BullMQ's jobId is `id` here",
  delay: "BullMQ's delay is `delayMs` here",
  attempts: "BullMQ's attempts is `maxAttempts` here",
  lifo: 'jobs run first-in first-out within a priority; use `priority` 0 (highest) to run first',
  removeOnComplete:
    'completed jobs are always removed (results are opt-in with the queue option `storeResults`)',
  removeOnFail: 'failed jobs go to the dead-letter set, capped by the queue option `maxDead`',
  timestamp: 'the add time is Redis time, not settable',
  repeat: 'repeatable jobs are not supported yet',
  deduplication: 'a caller `id` dedupes (see the queue option `dedupeWindowMs`)',
};
/** Cluster replies to a command that did not run (safe to send again). */
const REFUSED = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /;
const CLEAN_LIMIT = 1000;
const MIN_REDIS = [6, 2];

const str = (v: Raw | number | undefined): string =>
  v === undefined ? '' : typeof v === 'number' ? String(v) : v.toString();
const num = (v: Raw | number | undefined): number => Number(str(v));

function isPosInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v > 0;
}

/**
 * One queue in one Redis (or one Cluster slot). Every state change is one Lua script.
 * Framework-agnostic: construct it from an ioredis `Redis` or `Cluster` client.
 */
export class WorkQueue<T = unknown, R = unknown> {
  readonly options: ResolvedQueueOptions;
  readonly keys: QueueKeys;
  private readonly scripts: ScriptClient;
  private checked: Promise<void> | undefined;
  private isReady = false;
  /** Leases this queue handed out (their shape needs no checking). */
  private readonly issued = new WeakSet<Lease>();
  /** Adds waiting for their pipeline + WAIT (`replicaAcks`), and whether one is out. */
  private readonly acks: AckItem[] = [];
  private acking = false;
  /** This producer's add calls: a session id and a counter (see add.lua: idempotent re-sends). */
  private readonly session = randomBytes(8).toString('base64url');
  private addSeq = 0;
  /** Add calls whose replies arrived since the last add call (their records can go). */
  private addsAcked: number[] = [];
  private readonly cancelAcks: CancelAcks;

  constructor(
    readonly client: Redis | Cluster,
    readonly name: string,
    options: WorkQueueOptions = {},
  ) {
    this.options = resolveQueueOptions(name, options);
    this.keys = queueKeys(this.options.prefix, name);
    this.scripts = defineScripts(client);
    this.cancelAcks = new CancelAcks(client, this.keys, this.options.commandTimeoutMs);
  }

  /**
   * Close the connections this queue opened itself (one that waits for cancel acknowledgements,
   * opened on demand). The client given to the constructor is the caller's: never closed here.
   */
  async close(): Promise<void> {
    await this.cancelAcks.close();
  }

  // ---------------------------------------------------------------- producing

  /** Store and enqueue one job. Resolves `{ added: false }` when its caller id exists. */
  async add(data: T, opts: AddOptions = {}): Promise<AddResult> {
    const [res] = await this.addBulk([{ data, opts }]);
    return res!;
  }

  /**
   * Store and enqueue many jobs in a few round trips (scripts of 2 000 jobs, pipelined).
   * Every job is validated and encoded first: one bad job refuses the batch, nothing written.
   */
  async addBulk(jobs: ReadonlyArray<{ data: T; opts?: AddOptions }>): Promise<AddResult[]> {
    if (!Array.isArray(jobs))
      throw invalid(['addBulk takes an array of { data, opts? }'], `${this.name}: add refused`);
    const problems: string[] = [];
    const encoded = jobs.map((j, i) => {
      const at = jobs.length > 1 ? `job ${i}: ` : '';
      if (typeof j !== 'object' || j === null) {
        problems.push(`${at}must be an object { data, opts? }`);
        return [];
      }
      return this.prepareAdd(j.data, j.opts ?? {}, at, problems);
    });
    if (problems.length > 0) {
      const first = problems.find((p) => p.includes('ENCODE:'));
      if (first) throw new WorkQueueError('ENCODE_FAILED', first.replace('ENCODE:', ''), problems);
      const big = problems.find((p) => p.includes('TOO_LARGE:'));
      if (big)
        throw new WorkQueueError('PAYLOAD_TOO_LARGE', big.replace('TOO_LARGE:', ''), problems);
      throw invalid(problems, `${this.name}: add refused`);
    }
    const calls: Promise<unknown>[] = [];
    for (let i = 0; i < encoded.length; i += ADD_CHUNK) {
      const chunk = encoded.length <= ADD_CHUNK ? encoded : encoded.slice(i, i + ADD_CHUNK);
      const seq = ++this.addSeq;
      const args = this.addArgs(chunk, seq);
      const call =
        this.options.replicaAcks > 0 ? this.addReplicated(args) : this.run('add', '0', args);
      calls.push(call.then((reply) => (this.addsAcked.push(seq), reply)));
    }
    const replies = (await Promise.all(calls)) as Reply[];
    const out: AddResult[] = [];
    for (const reply of replies) {
      for (let i = 0; i < reply.length; i += 2) {
        out.push({ id: str(reply[i]), added: num(reply[i + 1]) === 1 });
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- consuming

  /** Lease up to `count` jobs, highest priority first, FIFO within a priority. */
  async lease(opts: LeaseOptions = {}): Promise<LeasedJob<T>[]> {
    return (await this.leaseBatch(opts)).jobs;
  }

  /** `lease`, also telling when the next delayed job is due (for a worker's wait). */
  async leaseBatch(opts: LeaseOptions = {}): Promise<LeaseBatch<T>> {
    const { count, leaseMs, workerId } = this.leaseArgs(opts);
    const reply = (await this.run('lease', workerId, [count, leaseMs, workerId], true)) as Reply;
    return this.parseLeases(reply, 4, workerId);
  }

  /** Complete one job. True exactly once per job; false when it no longer exists. */
  async complete(lease: Lease, result?: R): Promise<boolean> {
    const { completed } = await this.completeAndLease([{ lease, result }]);
    return completed[0]!;
  }

  /**
   * Complete a batch of jobs of one worker and, in the same round trip, lease up to
   * `next.count` more. A lease that went stale still completes its job if that job (this
   * incarnation) still exists; its new holder then loses it.
   */
  async completeAndLease(
    items: ReadonlyArray<CompleteItem<R>>,
    next?: LeaseOptions,
    worker?: WorkerCallOptions,
  ): Promise<{ completed: boolean[]; adopted: boolean[] } & LeaseBatch<T>> {
    if (!Array.isArray(items)) throw invalid(['completeAndLease takes an array of { lease }']);
    const adopt = worker?.adopt ?? [];
    const workerId = items[0]?.lease?.workerId ?? adopt[0]?.workerId ?? next?.workerId ?? '0';
    const { count, leaseMs } = next
      ? this.leaseArgs({ ...next, workerId })
      : { count: 0, leaseMs: worker?.leaseMs ?? this.options.leaseMs };
    const o = this.options;
    const ttl = o.resultTtlMs;
    const args: Arg[] = [
      workerId,
      ttl,
      o.dedupeWindowMs,
      count,
      leaseMs,
      worker?.parkMs ?? 0,
      worker?.sweep ? 1 : 0,
      adopt.length,
      items.length,
    ];
    for (const lease of adopt) {
      if (lease.workerId !== workerId) {
        throw invalid(['completeAndLease takes leases of one worker at a time']);
      }
      args.push(lease.token);
    }
    for (const item of items) {
      const { lease, result } = (item ?? {}) as CompleteItem<R>;
      this.checkLease(lease);
      if (lease.workerId !== workerId) {
        throw invalid(['completeAndLease takes leases of one worker at a time']);
      }
      args.push(lease.seq, lease.token, ttl > 0 ? this.encodeResult(result) : '');
    }
    const reply = (await this.run('complete', workerId, args, true)) as Reply;
    const flags = reply.slice(4, 4 + adopt.length + items.length).map((v) => num(v) === 1);
    const batch = await this.parseLeases(reply, 4 + flags.length, workerId);
    return {
      adopted: flags.slice(0, adopt.length),
      completed: flags.slice(adopt.length),
      ...batch,
    };
  }

  /**
   * Count a failed attempt: retry after the job's backoff while attempts remain, else
   * dead-letter it with the error. An error with `retryable === false` (e.g.
   * `NonRetryableError`) or `{ retryable: false }` dead-letters at once.
   * Resolves 'lost' when the caller no longer holds the lease (nothing changed).
   */
  async fail(
    lease: Lease,
    error: unknown,
    opts: { retryable?: boolean } = {},
  ): Promise<FailOutcome> {
    this.checkLease(lease);
    const retryable =
      opts.retryable ??
      !(
        typeof error === 'object' &&
        error !== null &&
        (error as { retryable?: unknown }).retryable === false
      );
    const message = errorMessage(error);
    const job = lease as Partial<LeasedJob>;
    const delay = backoffDelay(job.backoff ?? this.options.backoff, job.attempt ?? 1);
    return this.failWith(lease, message, retryable ? 'retry' : 'dead', delay, '');
  }

  /** Give jobs back to the FRONT of their priority without counting an attempt. */
  async release(leases: Lease | readonly Lease[]): Promise<boolean[]> {
    return this.perWorker(leases, async (workerId, group) => {
      const args: Arg[] = [workerId, group.length];
      for (const l of group) args.push(l.seq, l.token);
      const reply = (await this.run('release', workerId, args)) as number[];
      return reply.map((v) => v === 1);
    });
  }

  /** Push lease deadlines to now + `ms` (Redis time); false for each lease that is lost. */
  async extend(leases: Lease | readonly Lease[], ms = this.options.leaseMs): Promise<boolean[]> {
    if (!isPosInt(ms))
      throw invalid([`extend ms must be a positive integer, got ${JSON.stringify(ms)}`]);
    return this.perWorker(leases, async (workerId, group) => {
      const args: Arg[] = [workerId, ms, group.length];
      for (const l of group) args.push(l.seq, l.token);
      const reply = (await this.run('extend', workerId, args)) as number[];
      const deadline = reply[0]!;
      return group.map((l, i) => {
        const ok = reply[i + 1] === 1;
        if (ok) l.deadline = deadline;
        return ok;
      });
    });
  }

  /** Record and publish progress (a number 0…1 or a small JSON value). False when the lease is lost. */
  async progress(lease: Lease, value: unknown): Promise<boolean> {
    this.checkLease(lease);
    let encoded: string | undefined;
    try {
      encoded = JSON.stringify(value);
    } catch (e) {
      throw new WorkQueueError(
        'ENCODE_FAILED',
        `progress value cannot be encoded: ${errorMessage(e)}`,
      );
    }
    if (encoded === undefined || encoded.length > 64 * 1024) {
      throw invalid(['progress must be a JSON value of at most 64 KiB']);
    }
    const r = await this.run('progress', lease.workerId, [
      lease.seq,
      lease.token,
      lease.workerId,
      encoded,
    ]);
    return r === 1;
  }

  // ---------------------------------------------------------------- managing

  /**
   * The job stops existing wherever it is. When a live worker holds it (running, prefetched or
   * handed off), cancel resolves once that worker has acknowledged that it will never start the
   * job (its signal aborts if it runs), or after `commandTimeoutMs` when it does not answer.
   */
  async cancel(id: string): Promise<boolean> {
    this.checkId(id);
    const ack = randomBytes(8).toString('base64url');
    const r = await this.run('cancel', '0', [id, ack, this.options.heartbeatTimeoutMs]);
    if (r === 2) await this.cancelAcks.wait(ack);
    return r === 1 || r === 2;
  }

  async getJob(id: string): Promise<JobInfo<T, R> | null> {
    this.checkId(id);
    const r = (await this.run('get', '0', [id], true)) as Reply;
    const state = str(r[0]) as JobInfo['state'];
    if (state === 'unknown') return null;
    if (state === 'completed') {
      const info: JobInfo<T, R> = { id, state };
      if (num(r[4]) !== 1) return info; // a caller id within its dedupe window, no result kept
      try {
        info.result = JSON.parse(str(r[2])) as R;
      } catch (e) {
        info.decodeError = errorMessage(e);
      }
      return info;
    }
    const meta = parseMeta(str(r[3]));
    const info: JobInfo<T, R> = {
      id,
      state,
      name: meta.n,
      priority: meta.p ?? 5,
      attemptsMade: meta.a ?? 0,
      leaseExpiries: meta.x ?? 0,
    };
    if (meta.e !== undefined) info.lastError = meta.e;
    if (meta.r !== undefined) info.deadReason = meta.r;
    if (str(r[4]) !== '') info.at = num(r[4]);
    if (str(r[5]) !== '') {
      try {
        info.progress = JSON.parse(str(r[5])) as unknown;
      } catch {
        info.progress = str(r[5]); // written by hand, not JSON: shown as stored
      }
    }
    try {
      info.data = this.decode(r[2] as Raw);
    } catch (e) {
      info.decodeError = errorMessage(e);
    }
    return info;
  }

  /** A completed job's stored result (when `storeResults` is on and it has not expired). */
  async getResult(id: string): Promise<R | undefined> {
    const info = await this.getJob(id);
    return info?.state === 'completed' ? info.result : undefined;
  }

  async counts(): Promise<QueueCounts> {
    const r = (await this.run('counts', '0', [this.options.heartbeatTimeoutMs])) as number[];
    const pendingByPriority = r.slice(0, 10);
    return {
      pendingByPriority,
      pending: pendingByPriority.reduce((a, b) => a + b, 0),
      delayed: r[10]!,
      leased: r[11]!,
      dead: r[12]!,
      workers: r[13]!,
    };
  }

  /**
   * Reclaim expired leases (to the front, counting a lease expiry), reclaim the leases of
   * workers whose heartbeat lapsed, promote due delayed jobs, drop expired results.
   * Cost is proportional to the work found.
   */
  async clean(): Promise<CleanReport> {
    const o = this.options;
    const report: CleanReport = {
      promoted: 0,
      reclaimed: 0,
      deadLettered: 0,
      deadWorkers: 0,
      reclaimedFromWorkers: 0,
      resultsExpired: 0,
      callerIdsFreed: 0,
    };
    for (;;) {
      const r = (await this.run('clean', '0', [
        CLEAN_LIMIT,
        o.maxLeaseExpiries,
        o.maxDead,
        o.heartbeatTimeoutMs,
      ])) as Reply;
      const [promoted, reclaimed, dead, expired, freed] = r.slice(0, 5).map(num) as [
        number,
        number,
        number,
        number,
        number,
      ];
      report.promoted += promoted;
      report.reclaimed += reclaimed;
      report.deadLettered += dead;
      report.resultsExpired += expired;
      report.callerIdsFreed += freed;
      for (const w of r.slice(5).map(str)) {
        const x = (await this.run('reclaim_worker', w, [
          w,
          o.heartbeatTimeoutMs,
          o.maxLeaseExpiries,
          o.maxDead,
        ])) as number[];
        if (x[0] === -1) continue;
        report.deadWorkers += 1;
        report.reclaimedFromWorkers += x[0]!;
        report.deadLettered += x[1]!;
      }
      if (Math.max(promoted, reclaimed + dead, expired, freed) < CLEAN_LIMIT) return report;
    }
  }

  /**
   * `clean()`, at most once per `intervalMs` across every process that calls this (workers and
   * the Nest cleaner do, every interval): the first to set the queue's guard key cleans. The
   * guard lives slightly less than the interval, so the one that cleaned last is not locked out
   * of its own next round. Resolves the report, or undefined when another cleaned this round.
   */
  async cleanIfDue(intervalMs: number, owner: string): Promise<CleanReport | undefined> {
    const ttl = Math.max(1, intervalMs - Math.min(200, Math.floor(intervalMs / 10)));
    const c = this.client;
    const context = `queue ${this.name}: clean guard`;
    const taken = await bounded(c, this.options.commandTimeoutMs, context, () =>
      c.set(this.keys.cleanGuard, owner, 'PX', ttl, 'NX'),
    ).catch((e: unknown) => {
      throw redisError(context, e);
    });
    return taken === 'OK' ? this.clean() : undefined;
  }

  /**
   * Deep check: walk the queue incrementally (LRANGE/ZRANGE pages, HSCAN) for jobs that break
   * an invariant, and fix each one atomically. Finds nothing in normal operation.
   */
  async repair(): Promise<RepairReport> {
    await this.ready();
    try {
      return await this.repairWalk();
    } catch (e) {
      throw redisError(`queue ${this.name}: repair`, e);
    }
  }

  private async repairWalk(): Promise<RepairReport> {
    const raw = this.client;
    const t = this.options.commandTimeoutMs;
    const at = `queue ${this.name}: repair`;
    // Every read of the walk bounded like the scripts.
    const c = {
      lrange: (k: string, a: number, b: number) => bounded(raw, t, at, () => raw.lrange(k, a, b)),
      zrange: (k: string, a: string, b: string) => bounded(raw, t, at, () => raw.zrange(k, a, b)),
      hscan: (k: string, cursor: string, count: number) =>
        bounded(raw, t, at, () => raw.hscan(k, cursor, 'COUNT', count)),
      eval: (script: string, numKeys: number, ...args: string[]) =>
        bounded(raw, t, at, () => raw.eval(script, numKeys, ...args)),
    };
    const k = this.keys;
    const places = new Map<string, number>();
    const mark = (id: string) => places.set(id, (places.get(id) ?? 0) + 1);
    const suspects = new Set<string>();
    const page = 1000;
    for (let p = 0; p <= 9; p++) {
      for (let start = 0; ; start += page) {
        const ids = await c.lrange(k.pending(p), start, start + page - 1);
        ids.forEach(mark);
        if (ids.length < page) break;
      }
    }
    for (const key of [k.delayed, k.leased, k.dead]) {
      for (let start = 0; ; start += page) {
        const ids = await c.zrange(key, String(start), String(start + page - 1));
        ids.forEach(mark);
        if (ids.length < page) break;
      }
    }
    const hscanAll = async (key: string, each: (field: string, value: string) => void) => {
      let cursor = '0';
      do {
        const [next, flat] = await c.hscan(key, cursor, page);
        for (let i = 0; i < flat.length; i += 2) each(flat[i]!, flat[i + 1]!);
        cursor = next;
      } while (cursor !== '0');
    };
    const withData = new Set<string>();
    await hscanAll(k.data, (id) => {
      withData.add(id);
      if ((places.get(id) ?? 0) !== 1) suspects.add(id);
    });
    for (const id of places.keys()) if (!withData.has(id)) suspects.add(id);
    const leased = new Set<string>();
    for (let start = 0; ; start += page) {
      const ids = await c.zrange(k.leased, String(start), String(start + page - 1));
      ids.forEach((id) => leased.add(id));
      if (ids.length < page) break;
    }
    const tokens = new Set<string>();
    await hscanAll(k.tokens, (id) => {
      tokens.add(id);
      if (!withData.has(id) || !leased.has(id)) suspects.add(id);
    });
    for (const id of leased) if (!tokens.has(id)) suspects.add(id);
    for (const part of ['m', 'pg']) {
      await hscanAll(k.base + part, (id) => {
        if (!withData.has(id)) suspects.add(id);
      });
    }
    const aliases: Array<[string, string]> = [];
    await hscanAll(k.base + 'ids', (cid, id) => {
      // '~<until>': a completed job's caller id kept for its dedupe window (clean() drops it).
      if (!id.startsWith('~') && !withData.has(id)) aliases.push([cid, id]);
    });
    const fixes: string[] = [];
    let tombstones = 0;
    for (const id of suspects) {
      const what = str((await this.run('repair', '0', [id])) as Raw);
      if (what === '~tombstone') tombstones += 1;
      else if (what !== '') fixes.push(`${id}: ${what}`);
    }
    // A caller id pointing at a missing job: drop it, if it still does (checked atomically).
    for (const [cid, id] of aliases) {
      const removed = await c.eval(
        "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] and redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 then return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0",
        2,
        k.base + 'ids',
        k.data,
        cid,
        id,
      );
      if (removed === 1) fixes.push(`${cid}: caller id of a missing job`);
    }
    return { checked: suspects.size + aliases.length, fixes, tombstones };
  }

  /** A page of the dead-letter set, oldest first. */
  async listDead(opts: { offset?: number; limit?: number } = {}): Promise<DeadJob<T>[]> {
    const offset = opts.offset ?? 0;
    const limit = opts.limit ?? 100;
    if (!Number.isInteger(offset) || offset < 0 || !isPosInt(limit) || limit > 10_000) {
      throw invalid(['listDead: offset must be an integer >= 0 and limit 1..10000']);
    }
    const r = (await this.run('dead', '0', ['list', offset, limit], true)) as Reply;
    const out: DeadJob<T>[] = [];
    for (let i = 0; i < r.length; i += 4) {
      const meta = parseMeta(str(r[i + 2]));
      const job: DeadJob<T> = {
        id: meta.i ?? str(r[i]),
        name: meta.n,
        reason: meta.r ?? '',
        lastError: meta.e,
        attemptsMade: meta.a ?? 0,
        diedAt: num(r[i + 3]),
      };
      try {
        job.data = this.decode(r[i + 1] as Raw);
      } catch (e) {
        job.decodeError = errorMessage(e);
      }
      out.push(job);
    }
    return out;
  }

  /** Requeue a dead job (to the back of its priority), attempts reset. False when not dead. */
  async retryDead(id: string): Promise<boolean> {
    this.checkId(id);
    return (await this.run('dead', '0', ['retry', id])) === 1;
  }

  /** Purge one dead job, or (no id) the whole dead-letter set. Resolves how many were purged. */
  async purgeDead(id?: string): Promise<number> {
    if (id !== undefined) {
      this.checkId(id);
      return (await this.run('dead', '0', ['purge', id])) as number;
    }
    let total = 0;
    for (;;) {
      const n = (await this.run('dead', '0', ['purgeall', CLEAN_LIMIT])) as number;
      total += n;
      if (n < CLEAN_LIMIT) return total;
    }
  }

  // ---------------------------------------------------------------- workers

  /** Register a worker (its heartbeat starts now, from Redis time). Resolves its id. */
  async registerWorker(): Promise<string> {
    return str((await this.run('worker', '0', ['register', '0', this.hbTimeout])) as Raw);
  }

  async heartbeat(workerId: string): Promise<void> {
    await this.run('worker', workerId, ['beat', workerId, this.hbTimeout]);
  }

  /** Forget a worker that released or finished its jobs. */
  async deregisterWorker(workerId: string): Promise<void> {
    await this.run('worker', workerId, ['leave', workerId, this.hbTimeout]);
  }

  /** Stop handing jobs off to a worker (it pauses); one waiting for it goes back in line. */
  async unparkWorker(workerId: string): Promise<void> {
    await this.run('worker', workerId, ['unpark', workerId, this.hbTimeout]);
  }

  /**
   * After a dropped connection: give back at once every job Redis says the worker holds but the
   * worker does not know of (`known`: tokens of its running, buffered and handed-off jobs).
   * Resolves how many leases and hand-offs went back.
   */
  async reconcile(
    workerId: string,
    known: readonly string[],
  ): Promise<{ leases: number; handoffs: number }> {
    const r = (await this.run('reconcile', workerId, [workerId, ...known])) as number[];
    return { leases: r[0]!, handoffs: r[1]! };
  }

  private get hbTimeout(): number {
    return this.options.heartbeatTimeoutMs;
  }

  /**
   * Block on `blockingClient` (a connection used for nothing else) until work may be
   * available or `timeoutMs` passes: BLMOVE from the wake list into the worker's hand-off list,
   * so that whatever it takes is findable from its identity (a dead worker's hand-offs are
   * reclaimed with its leases). Resolves true when woken, a job when one was handed off to this
   * (parked) worker — adopt it with `completeAndLease([], …, { adopt, sweep })` — and false on
   * timeout. After an entry was taken, the next call must sweep the hand-off list.
   */
  async waitForWork(
    blockingClient: Redis | Cluster,
    timeoutMs: number,
    workerId: string,
  ): Promise<boolean | LeasedJob<T>> {
    const seconds = Math.max(0.01, timeoutMs / 1000);
    const r = await blockingClient.blmoveBuffer(
      this.keys.wake,
      this.keys.workerHands(workerId),
      'LEFT',
      'RIGHT',
      Number(seconds.toFixed(3)),
    );
    if (r === null) return false;
    return this.parseHandoff(r, workerId) ?? true;
  }

  /**
   * A wake list entry that is a job handed off to parked workers (see lib/scripts/add.lua):
   * `h<id>:<token>:<deadline>:<priority>:<meta bytes>\n<meta><payload>`. The lease is the
   * popping worker's once it adopts it (`completeAndLease(…, { adopt })`). Undefined for a
   * plain wake-up, and for an entry that cannot be decoded: that one is not adopted, so its
   * hand-off lease lapses and clean() puts it back, to be dead-lettered by a regular lease.
   */
  private parseHandoff(entry: Buffer, workerId: string): LeasedJob<T> | undefined {
    const nl = entry.indexOf(10);
    const head = /^h(\d+):(\d+):(\d+):\d:(\d+)$/.exec(entry.toString('latin1', 0, Math.max(0, nl)));
    if (nl < 0 || !head) return undefined;
    const metaEnd = nl + 1 + Number(head[4]);
    const parsed = this.parseJob(
      head[1]!,
      head[2]!,
      entry.subarray(metaEnd),
      entry.toString('utf8', nl + 1, metaEnd),
      workerId,
      Number(head[3]),
    );
    return 'data' in parsed ? parsed : undefined;
  }

  // ---------------------------------------------------------------- internals

  /** Dead-letter a leased job at once with a reason (undecodable payload, no handler, ...). */
  async deadLetter(lease: Lease, reason: string): Promise<FailOutcome> {
    this.checkLease(lease);
    return this.failWith(lease, reason, 'dead', 0, reason);
  }

  private async failWith(
    lease: Lease,
    message: string,
    mode: 'retry' | 'dead',
    delay: number,
    reason: string,
  ): Promise<FailOutcome> {
    const r = await this.run('fail', lease.workerId, [
      lease.seq,
      lease.token,
      lease.workerId,
      message,
      mode,
      delay,
      this.options.maxAttempts,
      this.options.maxDead,
      reason,
    ]);
    return r === 1 ? 'retried' : r === 2 ? 'dead' : 'lost';
  }

  private async run(
    name: ScriptName,
    workerId: string,
    args: Arg[],
    buffers = false,
  ): Promise<unknown> {
    if (!this.isReady) await this.ready();
    const fn =
      this.scripts[`wq_${name}${buffers && this.options.codec === 'buffer' ? 'Buffer' : ''}`]!;
    let reply: unknown;
    const context = `queue ${this.name}: ${name}`;
    try {
      // add takes its own keys (numkeys first, in args); every other script the fixed layout.
      reply = await bounded(this.client, this.options.commandTimeoutMs, context, () =>
        name === 'add'
          ? fn.call(this.client, ...args)
          : fn.call(
              this.client,
              ...this.keys.fixed,
              this.keys.workerLeases(workerId),
              this.keys.workerHands(workerId),
              ...args,
            ),
      );
    } catch (e) {
      throw redisError(`queue ${this.name}: ${name}`, e);
    }
    if (typeof reply === 'number' && reply < 0 && reply !== -1) throw scriptError(reply, context);
    return reply;
  }

  /**
   * An `add` script followed by `WAIT replicaAcks replicaAckTimeoutMs` on the same connection:
   * one pipeline, which a Cluster client sends to the node that serves the queue's slot, so the
   * WAIT counts the replicas of the node that ran the script. Group commit: while one such
   * pipeline is out (WAIT holds its connection), further adds queue up and go together in the
   * next one, behind a single WAIT. A script refused before it ran (slot moved or migrating,
   * cluster down during a failover) is sent again.
   */
  private addReplicated(args: Arg[]): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const patience = Math.max(10_000, 2 * this.options.replicaAckTimeoutMs);
      this.acks.push({ args, resolve, reject, deadline: Date.now() + patience, tries: 0 });
      if (!this.acking) void this.flushAcks();
    });
  }

  private async flushAcks(): Promise<void> {
    this.acking = true;
    try {
      await this.ready();
      while (this.acks.length > 0) {
        const batch = this.acks.splice(0);
        let again: AckItem[] = [];
        try {
          again = await this.sendAcked(batch);
        } catch (e) {
          for (const it of batch) it.reject(redisError(`queue ${this.name}: add`, e));
        }
        if (again.length > 0) {
          if (isCluster(this.client)) this.client.refreshSlotsCache();
          const tries = Math.max(...again.map((it) => ++it.tries));
          await new Promise((r) => setTimeout(r, Math.min(500, 25 * tries)));
          this.acks.unshift(...again);
        }
      }
    } catch (e) {
      for (const it of this.acks.splice(0)) it.reject(e);
    } finally {
      this.acking = false;
    }
  }

  /** One pipeline: the batch's scripts, then WAIT. Settles each item, or returns it to resend. */
  private async sendAcked(batch: AckItem[]): Promise<AckItem[]> {
    const { replicaAcks: want, replicaAckTimeoutMs: timeoutMs } = this.options;
    const context = `queue ${this.name}: add`;
    const p = this.client.pipeline();
    const script = (p as unknown as Record<string, PipelineScript>).wq_add!;
    for (const it of batch) script.call(p, ...it.args);
    p.call('WAIT', want, timeoutMs);
    const o = this.options;
    const res =
      (await bounded(this.client, o.commandTimeoutMs + o.replicaAckTimeoutMs, context, () =>
        p.exec(),
      )) ?? [];
    const [waitErr, acks] = res[batch.length] ?? [new Error('no reply to WAIT'), 0];
    const again: AckItem[] = [];
    batch.forEach((it, i) => {
      const [err, reply] = res[i] ?? [new Error('no reply'), undefined];
      if (err && REFUSED.test(err.message) && Date.now() < it.deadline) {
        again.push(it);
      } else if (err) {
        it.reject(redisError(context, err));
      } else if (waitErr) {
        it.reject(redisError(`${context}: WAIT`, waitErr));
      } else if (typeof reply === 'number' && reply < 0 && reply !== -1) {
        it.reject(scriptError(reply, context));
      } else if (Number(acks) < want) {
        it.reject(
          new WorkQueueError(
            'NOT_REPLICATED',
            `${context}: stored on the master but confirmed by ${Number(acks)} of ${want} replica(s) within ${timeoutMs} ms; it is lost if the master fails before replicating it. Add it again with the same caller id to retry without a duplicate.`,
          ),
        );
      } else {
        it.resolve(reply);
      }
    });
    return again;
  }

  /** Checks Redis once (version >= 6.2; warns when eviction can drop jobs). */
  ready(): Promise<void> {
    this.checked ??= this.checkRedis().then(
      () => {
        this.isReady = true;
      },
      (e: unknown) => {
        this.checked = undefined;
        throw e;
      },
    );
    return this.checked;
  }

  private async checkRedis(): Promise<void> {
    let infos: Array<{ version: string; maxmemoryPolicy: string }>;
    try {
      infos = await bounded(
        this.client,
        this.options.commandTimeoutMs,
        `queue ${this.name}: INFO`,
        () => this.infos(),
      );
    } catch (e) {
      throw redisError(`queue ${this.name}: cannot read Redis INFO`, e);
    }
    for (const { version, maxmemoryPolicy: policy } of infos) {
      const [major = 0, minor = 0] = version.split('.').map(Number);
      if (major < MIN_REDIS[0]! || (major === MIN_REDIS[0] && minor < MIN_REDIS[1]!)) {
        throw new WorkQueueError(
          'REDIS_VERSION',
          `queue ${this.name}: Redis ${version || '(unknown)'} is too old; nestjs-work-queue needs Redis >= 6.2`,
        );
      }
      if (policy && policy !== 'noeviction') {
        this.options.logger?.warn(
          `queue ${this.name}: Redis maxmemory-policy is '${policy}': under memory pressure Redis may evict queue keys and LOSE JOBS. Set maxmemory-policy noeviction.`,
        );
        break;
      }
    }
  }

  /**
   * The eviction policy and version, for health checks. On a Cluster, of every master: the
   * lowest version, and the first policy other than `noeviction` if any master has one.
   */
  async redisInfo(): Promise<{ version: string; maxmemoryPolicy: string }> {
    const infos = await this.infos();
    const lowest = infos.reduce((a, b) => (compareVersions(b.version, a.version) < 0 ? b : a));
    const risky = infos.find((i) => i.maxmemoryPolicy !== 'noeviction');
    return { version: lowest.version, maxmemoryPolicy: (risky ?? lowest).maxmemoryPolicy };
  }

  /**
   * INFO of the Redis, or of every master of a Cluster (a keyless command would reach one random
   * node, and masters can be configured differently).
   */
  private async infos(): Promise<Array<{ version: string; maxmemoryPolicy: string }>> {
    const c = this.client;
    let texts: string[];
    if (isCluster(c)) {
      await c.ping(); // connects, so that the masters are known
      texts = await Promise.all(c.nodes('master').map((n) => n.info()));
      if (texts.length === 0) texts = [await c.info()];
    } else {
      texts = [await c.info()];
    }
    return texts.map((info) => {
      const field = (f: string) => new RegExp(`^${f}:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? '';
      return { version: field('redis_version'), maxmemoryPolicy: field('maxmemory_policy') };
    });
  }

  private leaseArgs(opts: LeaseOptions): { count: number; leaseMs: number; workerId: string } {
    const o: LeaseOptions = opts ?? {};
    const count = o.count ?? 1;
    const leaseMs = o.leaseMs ?? this.options.leaseMs;
    const workerId = o.workerId ?? '0';
    const problems: string[] = [];
    if (!isPosInt(count) || count > 10_000)
      problems.push(`count must be an integer 1..10000, got ${JSON.stringify(count)}`);
    if (!isPosInt(leaseMs))
      problems.push(`leaseMs must be a positive integer, got ${JSON.stringify(leaseMs)}`);
    if (!/^\d+$/.test(workerId))
      problems.push(`workerId must come from registerWorker(), got ${JSON.stringify(workerId)}`);
    if (problems.length) throw invalid(problems, `${this.name}: lease refused`);
    return { count, leaseMs, workerId };
  }

  private async parseLeases(
    reply: Reply,
    offset: number,
    workerId: string,
  ): Promise<LeaseBatch<T>> {
    const now = num(reply[0]);
    const deadline = num(reply[1]);
    const nextDue = num(reply[2]);
    const drain = num(reply[3]) === 1;
    const jobs: LeasedJob<T>[] = [];
    const bad: Array<{ lease: Lease; reason: string }> = [];
    for (let i = offset; i + 3 < reply.length; i += 4) {
      const seq = str(reply[i]);
      const token = str(reply[i + 1]);
      const job = this.parseJob(
        seq,
        token,
        reply[i + 2] as Raw,
        str(reply[i + 3]),
        workerId,
        deadline,
      );
      if ('data' in job) jobs.push(job);
      else bad.push(job);
    }
    for (const { lease, reason } of bad) {
      await this.deadLetter(lease, reason);
      this.options.logger?.warn(`queue ${this.name}: job ${lease.id} dead-lettered: ${reason}`);
    }
    return { jobs, now, nextDue, drain };
  }

  /** One leased job from its stored parts, or why it cannot be run. */
  private parseJob(
    seq: string,
    token: string,
    raw: Raw,
    rawMeta: string,
    workerId: string,
    deadline: number,
  ): LeasedJob<T> | { lease: Lease; reason: string } {
    let meta: Meta = {};
    let badMeta: string | undefined;
    if (rawMeta !== '') {
      try {
        const parsed: unknown = JSON.parse(rawMeta);
        if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
          meta = saneMeta(parsed as Record<string, unknown>);
        else badMeta = 'not a JSON object';
      } catch {
        badMeta = `not valid JSON (${Buffer.byteLength(rawMeta)} bytes)`;
      }
    }
    const lease: Lease = {
      queueKey: this.keys.base,
      id: meta.i ?? seq,
      seq,
      token,
      workerId,
      deadline,
    };
    if (badMeta !== undefined) return { lease, reason: `undecodable metadata: ${badMeta}` };
    let data: T;
    try {
      data = this.decode(raw);
    } catch {
      // The reason is logged: say what is wrong, never quote the payload (JSON.parse's
      // message does).
      return { lease, reason: `undecodable: payload is not valid JSON (${rawSize(raw)} bytes)` };
    }
    // A literal with every field (not a spread of `lease`): one object shape for every job.
    const job: LeasedJob<T> = {
      queueKey: lease.queueKey,
      id: lease.id,
      seq,
      token,
      workerId,
      deadline,
      data,
      name: meta.n,
      priority: meta.p ?? 5,
      attempt: (meta.a ?? 0) + 1,
      maxAttempts: meta.m ?? this.options.maxAttempts,
      leaseExpiries: meta.x ?? 0,
      backoff: meta.b ?? this.options.backoff,
    };
    this.issued.add(job);
    return job;
  }

  /**
   * KEYS and ARGV of one add script (see lib/scripts/_keys_add.lua): numkeys, the six keys
   * every add needs, the pending lists of the priorities this chunk uses; then those
   * priorities as digits, the job count and each job's values.
   */
  private addArgs(chunk: Arg[][], seq: number): Arg[] {
    let used = 0;
    for (const job of chunk) used |= 1 << (job[3] as number);
    let digits = '';
    for (let p = 0; p <= 9; p++) if (used & (1 << p)) digits += p;
    const keys = this.keys.forAdd(this.session, digits);
    const acked = this.addsAcked.splice(0, MAX_ACKS_PER_ADD);
    const o = this.options;
    const args: Arg[] = [keys.length, ...keys, digits, o.leaseMs, chunk.length, seq];
    // Records outlive any re-send of a call that resolved (within commandTimeoutMs).
    args.push(Math.max(60_000, 4 * o.commandTimeoutMs), acked.length, ...acked);
    for (const job of chunk) for (const v of job) args.push(v);
    return args;
  }

  private prepareAdd(data: T, opts: AddOptions, at: string, problems: string[]): Arg[] {
    const before = problems.length;
    if (typeof opts !== 'object' || opts === null) {
      problems.push(`${at}options must be an object`);
      return [];
    }
    for (const key of Object.keys(opts)) {
      if (ADD_OPTION_KEYS.has(key)) continue;
      const hint = BULLMQ_HINTS[key];
      problems.push(
        `${at}unknown option ${JSON.stringify(key)}${hint ? ` (${hint})` : ''}; known: ${[...ADD_OPTION_KEYS].join(', ')}`,
      );
    }
    const { id, name, priority = 5, delayMs, runAt, maxAttempts, backoff } = opts;
    if (id !== undefined) {
      if (typeof id !== 'string' || id.length === 0 || id.length > 256) {
        problems.push(`${at}id must be a string of 1-256 characters`);
      } else if (/^\d+$/.test(id)) {
        problems.push(
          `${at}id ${JSON.stringify(id)} is all digits; numeric ids are reserved for generated ids`,
        );
      }
    }
    if (
      name !== undefined &&
      (typeof name !== 'string' || name.length === 0 || name.length > 200)
    ) {
      problems.push(`${at}name must be a string of 1-200 characters`);
    }
    if (!Number.isInteger(priority) || priority < 0 || priority > 9) {
      problems.push(
        `${at}priority must be an integer 0 (highest)..9 (lowest), got ${JSON.stringify(priority)}`,
      );
    }
    if (
      delayMs !== undefined &&
      (typeof delayMs !== 'number' || !Number.isInteger(delayMs) || delayMs < 0)
    ) {
      problems.push(`${at}delayMs must be an integer >= 0, got ${JSON.stringify(delayMs)}`);
    }
    let runAtMs: number | undefined;
    if (runAt !== undefined) {
      runAtMs = runAt instanceof Date ? runAt.getTime() : runAt;
      if (typeof runAtMs !== 'number' || !Number.isFinite(runAtMs))
        problems.push(`${at}runAt must be a valid Date or ms timestamp`);
      if (delayMs !== undefined) problems.push(`${at}give delayMs or runAt, not both`);
    }
    if (maxAttempts !== undefined && !isPosInt(maxAttempts)) {
      problems.push(
        `${at}maxAttempts must be a positive integer, got ${JSON.stringify(maxAttempts)}`,
      );
    }
    checkBackoff(`${at}backoff`, backoff, problems);
    let payload: Raw = '';
    try {
      payload = this.encode(data);
    } catch (e) {
      const code = e instanceof WorkQueueError ? e.code : 'ENCODE_FAILED';
      problems.push(
        `${code === 'PAYLOAD_TOO_LARGE' ? 'TOO_LARGE:' : code === 'ENCODE_FAILED' ? 'ENCODE:' : ''}${at}${errorMessage(e)}`,
      );
    }
    if (problems.length > before) return [];
    const meta: Meta = {};
    if (id !== undefined) meta.i = id;
    if (name !== undefined) meta.n = name;
    if (priority !== 5) meta.p = priority;
    if (maxAttempts !== undefined) meta.m = maxAttempts;
    if (backoff !== undefined) meta.b = backoff;
    const schedule = delayMs
      ? `d${delayMs}`
      : runAtMs !== undefined
        ? `a${Math.floor(runAtMs)}`
        : '';
    return [
      id ?? '',
      payload,
      Object.keys(meta).length ? JSON.stringify(meta) : '',
      priority,
      schedule,
    ];
  }

  private encode(data: T): Raw {
    const max = this.options.maxPayloadBytes;
    let out: Raw;
    switch (this.options.codec) {
      case 'json': {
        if (data === undefined)
          throw new WorkQueueError('ENCODE_FAILED', 'data is undefined (use null for "no data")');
        let s: string | undefined;
        try {
          s = JSON.stringify(data);
        } catch (e) {
          throw new WorkQueueError(
            'ENCODE_FAILED',
            `data cannot be encoded as JSON: ${errorMessage(e)}`,
          );
        }
        if (s === undefined)
          throw new WorkQueueError(
            'ENCODE_FAILED',
            `data of type ${typeof data} cannot be encoded as JSON`,
          );
        out = s;
        break;
      }
      case 'string':
        if (typeof data !== 'string')
          throw new WorkQueueError(
            'ENCODE_FAILED',
            `codec 'string' takes strings, got ${typeof data}`,
          );
        out = data;
        break;
      case 'buffer':
        if (!Buffer.isBuffer(data))
          throw new WorkQueueError(
            'ENCODE_FAILED',
            `codec 'buffer' takes Buffers, got ${typeof data}`,
          );
        out = data;
        break;
    }
    const size = typeof out === 'string' ? Buffer.byteLength(out) : out.length;
    if (size > max)
      throw new WorkQueueError(
        'PAYLOAD_TOO_LARGE',
        `payload is ${size} bytes, over maxPayloadBytes ${max}`,
      );
    return out;
  }

  private decode(raw: Raw): T {
    switch (this.options.codec) {
      case 'json':
        return JSON.parse(raw.toString()) as T;
      case 'string':
        return raw.toString() as T;
      case 'buffer':
        return (Buffer.isBuffer(raw) ? raw : Buffer.from(raw)) as T;
    }
  }

  private encodeResult(result: unknown): string {
    let s: string | undefined;
    try {
      s = JSON.stringify(result ?? null);
    } catch (e) {
      throw new WorkQueueError(
        'ENCODE_FAILED',
        `result cannot be encoded as JSON: ${errorMessage(e)}`,
      );
    }
    return s ?? 'null';
  }

  private checkLease(lease: Lease): void {
    if (this.issued.has(lease)) return; // ours, unchanged shape: skip the checks below
    if (
      typeof lease !== 'object' ||
      lease === null ||
      typeof lease.seq !== 'string' ||
      typeof lease.token !== 'string'
    ) {
      throw new WorkQueueError('INVALID_ARGUMENT', 'not a lease (use a lease returned by lease())');
    }
    if (lease.queueKey !== this.keys.base) {
      throw new WorkQueueError(
        'FOREIGN_LEASE',
        `lease of ${lease.queueKey} given to queue ${this.keys.base}`,
      );
    }
    if (!/^\d+$/.test(lease.seq) || !/^s?\d+$/.test(lease.token) || !/^\d+$/.test(lease.workerId)) {
      throw new WorkQueueError('INVALID_ARGUMENT', 'malformed lease (forged?)');
    }
  }

  private checkId(id: string): void {
    if (typeof id !== 'string' || id.length === 0 || id.length > 256)
      throw invalid(['id must be a string of 1-256 characters']);
  }

  private async perWorker(
    leases: Lease | readonly Lease[],
    fn: (workerId: string, group: Lease[]) => Promise<boolean[]>,
  ): Promise<boolean[]> {
    const list = Array.isArray(leases) ? (leases as readonly Lease[]) : [leases as Lease];
    const groups = new Map<string, Lease[]>();
    for (const l of list) {
      this.checkLease(l);
      const g = groups.get(l.workerId) ?? [];
      g.push(l);
      groups.set(l.workerId, g);
    }
    const result = new Map<Lease, boolean>();
    for (const [w, g] of groups) {
      const r = await fn(w, g);
      g.forEach((l, i) => result.set(l, r[i]!));
    }
    return list.map((l) => result.get(l)!);
  }
}

/** Duck-typed, so that a Cluster from another copy of ioredis is recognised too. */
function isCluster(c: Redis | Cluster): c is Cluster {
  return (c as { isCluster?: unknown }).isCluster === true;
}

function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] || 0) - (y[i] || 0);
    if (d !== 0) return d;
  }
  return 0;
}

function rawSize(v: Raw | number | undefined): number {
  return Buffer.isBuffer(v) ? v.length : Buffer.byteLength(str(v));
}

function parseMeta(s: string): Meta {
  if (s === '') return {};
  try {
    const parsed: unknown = JSON.parse(s);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? saneMeta(parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/**
 * The fields of stored metadata that have the expected type and range (as the scripts read it,
 * see decode_meta in _common.lua): metadata written by hand must not turn `attempt` into a
 * string or `priority` into 42.
 */
function saneMeta(o: Record<string, unknown>): Meta {
  const meta: Meta = {};
  const count = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;
  for (const k of ['i', 'n', 'e', 'r'] as const) if (typeof o[k] === 'string') meta[k] = o[k];
  if (count(o.p) && o.p <= 9) meta.p = o.p;
  for (const k of ['a', 'm', 'x'] as const) if (count(o[k])) meta[k] = o[k];
  if (o.b !== undefined) {
    const problems: string[] = [];
    checkBackoff('b', o.b, problems);
    if (problems.length === 0) meta.b = o.b as BackoffOptions;
  }
  return meta;
}
