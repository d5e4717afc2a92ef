/**
 * A client that dies: a second WorkQueue on its own connection leases jobs (as a registered
 * worker with long leases, or as no worker with short ones), maybe sends one more command
 * (complete, extend, or another lease), and its socket is destroyed at once. Its jobs must come back (heartbeat lapse or lease expiry,
 * then clean), none lost. Whether the last command ran is not known from its reply (there is
 * none): it is read back from Redis once the server has dropped the connection.
 */
import { expect } from '@jest/globals';
import type { Redis } from 'ioredis';
import { WorkQueue } from '../../../lib/index.js';
import { LEASE_PAD } from '../../../lib/keys.js';
import { waitFor } from '../wait.js';
import { Checked } from './commands.js';
import { redisTime, type Real } from './snapshot.js';
import { MODEL_QUEUE, type Model, type Payload } from './model.js';

export type LastWords = 'none' | 'complete' | 'extend' | 'lease';

export class Death extends Checked {
  constructor(
    readonly count: number,
    readonly asWorker: boolean,
    readonly leaseMs: number,
    readonly lastWords: LastWords,
  ) {
    super();
  }

  async act(m: Model, r: Real): Promise<void> {
    const client = r.newClient();
    // Once only (a second disconnect() of ioredis leaves a 2 s timer behind). The socket is
    // destroyed at once: a command just written may run, but its reply is never read.
    let alive = true;
    const die = () => {
      if (alive) client.disconnect();
      client.stream?.destroy();
      alive = false;
    };
    try {
      await this.liveThenDie(m, r, client, die);
    } finally {
      die(); // when it failed before its death
    }
  }

  private async liveThenDie(m: Model, r: Real, client: Redis, die: () => void): Promise<void> {
    const dq = new WorkQueue<Payload>(client, r.q.name, {
      ...MODEL_QUEUE,
      logger: false,
      prefix: r.q.options.prefix,
    });
    const clientId = Number(await client.client('ID'));
    let workerId: string | undefined;
    if (this.asWorker) {
      workerId = await dq.registerWorker();
      const beat = await r.redis.zscore(r.q.keys.workers, workerId);
      m.beat(workerId, Number(beat));
    }
    // A worker's leases are long: only its heartbeat lapsing brings them back early.
    const leaseMs = this.asWorker ? 60_000 : this.leaseMs;
    const batch = await dq.leaseBatch({ count: this.count, leaseMs, workerId });
    expect(batch.jobs.map((j) => j.seq)).toEqual(m.lease(this.count, batch.now));
    for (const j of batch.jobs) m.leased(j);

    const last = batch.jobs[0];
    const leasedUntil = last?.deadline ?? 0;
    const t0 = await redisTime(r);
    if (last && this.lastWords === 'complete') void dq.complete(last).catch(() => false);
    if (last && this.lastWords === 'extend') void dq.extend(last, 120_000).catch(() => [false]);
    if (this.lastWords === 'lease')
      void dq.lease({ count: this.count, leaseMs, workerId }).catch(() => []);
    die();
    await waitFor(async () => String(await r.redis.client('LIST', 'ID', clientId)).trim() === '', {
      intervalMs: 5,
      what: `Redis to drop client ${clientId}`,
    });

    let ran: boolean;
    if (this.lastWords === 'lease') {
      // A worker holding the batch it just took cannot take a suspect job (it runs alone).
      const holds = workerId !== undefined && batch.jobs.length > 0;
      ran = await this.lostLease(m, r, t0, leaseMs, workerId ?? '0', holds);
    } else if (!last || this.lastWords === 'none') {
      return r.note(`death: ${this.asWorker ? 'worker' : 'no worker'}`);
    } else if (this.lastWords === 'complete') {
      // Completed: kept (or trimmed at once, its payload gone).
      ran =
        (await r.redis.zscore(r.q.keys.key('completedJobs'), last.seq)) !== null ||
        (await r.redis.hexists(r.q.keys.dataBucket(last.seq), last.seq)) === 0;
      if (ran) {
        expect(m.complete(last)).toBe(true);
        await m.kept.finish(r.q, r.redis);
      }
    } else {
      const deadline = Number(await r.redis.zscore(r.q.keys.leased, last.seq));
      expect(deadline).toBeGreaterThanOrEqual(leasedUntil);
      ran = deadline > leasedUntil;
      m.extend(last, deadline, deadline - 120_000);
    }
    r.note(`death: last ${this.lastWords} ${ran ? 'ran' : 'never ran'}`);
  }

  /**
   * A lease whose reply was lost: the tokens in Redis the model does not know are its leases.
   * They must be the jobs the model would have leased at some Redis time after `t0` (due
   * delayed jobs are promoted first), in token order. Returns whether it ran.
   */
  private async lostLease(
    m: Model,
    r: Real,
    t0: number,
    leaseMs: number,
    workerId: string,
    holds: boolean,
  ): Promise<boolean> {
    const t1 = await redisTime(r);
    const tokens = await r.redis.hgetall(r.q.keys.leaseHolders);
    const unknown = Object.entries(tokens)
      .filter(([seq, v]) => {
        if (seq === LEASE_PAD) return false;
        const lease = m.jobs.get(seq)?.lease;
        return !lease || v !== `${lease.token}:${lease.workerId}`;
      })
      .sort(([, a], [, b]) => parseInt(a, 10) - parseInt(b, 10));
    const times = [t0, ...m.timeEvents().filter((t) => t > t0 && t <= t1)];
    if (unknown.length === 0) {
      // A lease that took nothing may still have dropped tombstones of cancelled jobs it met
      // (lease_jobs pops them), promoted due delayed jobs it could not take, and moved the round
      // robin of groups (an empty group leaves the ready set at its turn, turns are counted):
      // the keys tell whether it ran, and at which Redis time.
      const got = await leaseTraces(r);
      if (got === traces(m)) return false;
      const now = times.find((t) => {
        const c = m.clone();
        return c.lease(this.count, t, holds).length === 0 && traces(c) === got;
      });
      if (now === undefined)
        throw new Error(
          `a lost lease took nothing leaving ${got}: not what the model does at any Redis time in ${t0}..${t1} (nor before it ran: ${traces(m)})`,
        );
      expect(m.lease(this.count, now, holds)).toEqual([]);
      return true;
    }
    const seqs = unknown.map(([seq]) => seq);
    // Its Redis time shows in what it took and in which delayed jobs it promoted.
    const delayed = (await r.redis.zrange(r.q.keys.delayed, '0', '-1')).sort().join();
    const now = times.find((t) => {
      const c = m.clone();
      const took = c.lease(this.count, t, holds).join();
      const left = [...c.jobs.values()].filter((j) => j.state === 'delayed').map((j) => j.seq);
      return took === seqs.join() && left.sort().join() === delayed;
    });
    if (now === undefined)
      throw new Error(
        `a lost lease took ${seqs.join()} leaving delayed ${delayed}: not what the model does at any Redis time in ${t0}..${t1}`,
      );
    expect(m.lease(this.count, now, holds)).toEqual(seqs);
    for (const [seq, v] of unknown) {
      const job = m.jobs.get(seq)!;
      // A flow child's lease names its parent (complete() then delivers its notice), also one
      // cancelled or gone since (its child left to end): by its seq, the model's flows having
      // no caller ids.
      const parent = m.flows.parentOf.get(seq)?.parent;
      const deadline = Number(await r.redis.zscore(r.q.keys.leased, seq));
      expect({ seq, v, deadline }).toEqual({
        seq,
        v: `${v.split(':')[0]}:${workerId}`,
        deadline: expect.any(Number),
      });
      expect(deadline).toBeGreaterThanOrEqual(t0 + leaseMs);
      // Its lease started when the lost call ran (deadline = start + leaseMs).
      expect((await r.q.getJob(job.id))!.startedAt).toBe(deadline - leaseMs);
      m.leased({
        queueKey: r.q.keys.base,
        id: job.id,
        seq,
        token: v.split(':')[0],
        workerId,
        deadline,
        data: job.data,
        name: undefined,
        priority: job.priority,
        attempt: job.attempts + 1,
        maxAttempts: job.maxAttempts,
        addedAt: job.addedAt ?? 0,
        startedAt: deadline - leaseMs,
        leaseExpiries: 0,
        backoff: { type: 'fixed', delayMs: job.retryMs },
        ...(job.group !== undefined ? { group: job.group } : {}),
        ...(parent !== undefined ? { parent: { queue: r.q.name, id: parent } } : {}),
      });
    }
    return true;
  }

  toString(): string {
    const who = this.asWorker ? 'worker' : `no worker, ${this.leaseMs}ms`;
    return `death(lease ${this.count} as ${who}, then ${this.lastWords})`;
  }
}

/**
 * What a lease that took nothing leaves behind, from the keys: the group turn counter, the ready
 * groups, the pending lists (tombstones included) and the delayed jobs (`traces` of the model).
 */
async function leaseTraces(r: Real): Promise<string> {
  const k = r.q.keys;
  const m = r.redis
    .multi()
    .get(k.key('groupTurnCounter'))
    .zrange(k.key('groupsReady'), '0', '-1')
    .zrange(k.delayed, '0', '-1');
  for (let p = 0; p <= 9; p++) m.lrange(k.pending(p), 0, -1);
  const [turn, ready, delayed, ...lists] = (await m.exec())!.map(([err, v]) => {
    if (err) throw err;
    return v;
  });
  return JSON.stringify({
    turn: Number(turn ?? 0),
    ready: (ready as string[]).sort(),
    delayed: (delayed as string[]).sort(),
    lists,
  });
}

/** The model's side of `leaseTraces`. */
function traces(m: Model): string {
  return JSON.stringify({
    turn: m.groups.turn,
    ready: [...m.groups.ready.keys()].sort(),
    delayed: [...m.jobs.values()]
      .filter((j) => j.state === 'delayed')
      .map((j) => j.seq)
      .sort(),
    lists: m.lists,
  });
}
