/**
 * A client that dies: a second WorkQueue on its own connection leases jobs (as a registered
 * worker with long leases, or as no worker with short ones), maybe sends one more command, and
 * its connection is dropped at once. Its jobs must come back (heartbeat lapse or lease expiry,
 * then clean), none lost. What the last command did is not known from its reply (there is
 * none): it is read back from Redis once the server has dropped the connection.
 */
import { expect } from '@jest/globals';
import type { Redis } from 'ioredis';
import { WorkQueue } from '../../../lib/index.js';
import { waitFor } from '../wait.js';
import { Checked } from './commands.js';
import type { Real } from './check.js';
import { MODEL_QUEUE, type Model, type Payload } from './model.js';

export type LastWords = 'none' | 'complete' | 'extend';

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
    // Disconnect once only: a second disconnect() of ioredis leaves a 2 s timer behind.
    let alive = true;
    const die = () => {
      if (alive) client.disconnect();
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
      m.workers.set(workerId, Number(beat));
    }
    // A worker's leases are long: only its heartbeat lapsing brings them back early.
    const leaseMs = this.asWorker ? 60_000 : this.leaseMs;
    const batch = await dq.leaseBatch({ count: this.count, leaseMs, workerId });
    expect(batch.jobs.map((j) => j.seq)).toEqual(m.lease(this.count, batch.now));
    for (const j of batch.jobs) m.leased(j);

    const last = batch.jobs[0];
    const leasedUntil = last?.deadline ?? 0; // (a reply of extend would move last.deadline)
    if (last && this.lastWords === 'complete') void dq.complete(last).catch(() => false);
    if (last && this.lastWords === 'extend') void dq.extend(last, 120_000).catch(() => [false]);
    die();
    await waitFor(async () => String(await r.redis.client('LIST', 'ID', clientId)).trim() === '', {
      intervalMs: 5,
      what: `Redis to drop client ${clientId}`,
    });

    if (!last || this.lastWords === 'none')
      return r.note(`death: ${this.asWorker ? 'worker' : 'no worker'}`);
    let ran: boolean;
    if (this.lastWords === 'complete') {
      ran = (await r.redis.hexists(r.q.keys.data, last.seq)) === 0;
      if (ran) expect(m.complete(last)).toBe(true);
    } else {
      const deadline = Number(await r.redis.zscore(r.q.keys.leased, last.seq));
      expect(deadline).toBeGreaterThanOrEqual(leasedUntil);
      ran = deadline > leasedUntil;
      m.extend(last, deadline);
    }
    r.note(`death: last ${this.lastWords} ${ran ? 'ran' : 'never ran'}`);
  }

  toString(): string {
    const who = this.asWorker ? 'worker' : `no worker, ${this.leaseMs}ms`;
    return `death(lease ${this.count} as ${who}, then ${this.lastWords})`;
  }
}
