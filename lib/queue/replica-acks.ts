/**
 * Writes confirmed by replicas (`replicaAcks`): the one home of the protocol for every call that
 * creates jobs or a schedule — `add`/`addBulk`, a flow's writes, `upsertSchedule`. A script
 * followed by `WAIT replicaAcks replicaAckTimeoutMs` on the same connection, as one pipeline,
 * which a Cluster client sends to the node that serves the script's slot, so the WAIT counts the
 * replicas of the node that ran the script (one ReplicaAcks per slot: a queue's, or a flow
 * runner's per queue set). WAIT confirms every earlier write of its connection too (replication
 * is one ordered stream): a call's earlier scripts on that node need no WAIT of their own. Group
 * commit: while one such pipeline is out (WAIT holds its connection), further scripts queue up
 * and go together in the next one, behind a single WAIT. A script refused before it ran (slot
 * moved or migrating, cluster down during a failover) is sent again.
 */
import type { ChainableCommander, Cluster, Redis } from 'ioredis';
import { redisError, SCRIPT_CODES, scriptError, WorkQueueError } from '../errors.js';
import type { ResolvedQueueOptions } from '../options.js';
import { bounded } from '../redis/bounded.js';
import { isCluster } from '../redis/connection.js';
import type { ScriptName } from '../scripts/assemble.js';
import { queueScript, type Arg, type ScriptArgs } from '../scripts/define.js';
import { delay } from '../util/timeout.js';

/** Cluster replies to a command that did not run (safe to send again). */
const REFUSED = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /;

/** What runs scripts on one slot: a queue's context, or a flow runner's queues. */
export interface AckTarget {
  readonly client: Redis | Cluster;
  /** Errors of `add` name it (`queue <name>: add`). */
  readonly name: string;
  readonly options: Pick<
    ResolvedQueueOptions,
    'replicaAcks' | 'replicaAckTimeoutMs' | 'commandTimeoutMs'
  >;
  /** The start-up check of Redis. */
  ready(): Promise<void>;
}

/** How a confirmed write's errors read. */
export interface AckCall {
  /** `queue emails: add`. */
  context: string;
  /** NOT_REPLICATED's advice: how to try again without a duplicate. */
  again: string;
}

/** A script's reply, and how many replicas confirmed it (WAIT's reply). */
export interface Acked {
  reply: unknown;
  acks: number;
}

interface AckItem extends AckCall {
  /** Queues its script in the pipeline. */
  queue(p: ChainableCommander): void;
  resolve(acked: Acked): void;
  reject(e: unknown): void;
  /** Past it, a refused script is no longer sent again. */
  deadline: number;
  tries: number;
}

const ADD_AGAIN = 'Add it again with the same caller id to retry without a duplicate.';

export class ReplicaAcks {
  private readonly waiting: AckItem[] = [];
  private sending = false;

  constructor(private readonly target: AckTarget) {}

  /** An add script (add.lua's KEYS with numkeys: ScriptKeys.of). */
  add(keys: readonly Arg[], args: ScriptArgs['add']): Promise<unknown> {
    const call = { context: `queue ${this.target.name}: add`, again: ADD_AGAIN };
    return this.run('add', keys, args, call).then((a) => confirmed(a, call, this.target.options));
  }

  /**
   * Script `name` (its KEYS, all in one slot), then WAIT: resolves its reply and how many
   * replicas confirmed it (see `confirmed`), or rejects with its own error when it failed.
   */
  run<N extends ScriptName>(
    name: N,
    keys: readonly Arg[],
    args: Readonly<ScriptArgs[N]>,
    call: AckCall,
  ): Promise<Acked> {
    return new Promise((resolve, reject) => {
      const patience = Math.max(10_000, 2 * this.target.options.replicaAckTimeoutMs);
      this.waiting.push({
        ...call,
        queue: (p) => queueScript(p, name, keys, args),
        resolve,
        reject,
        deadline: Date.now() + patience,
        tries: 0,
      });
      if (!this.sending) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.sending = true;
    try {
      await this.target.ready();
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0);
        let again: AckItem[] = [];
        try {
          again = await this.send(batch);
        } catch (e) {
          for (const it of batch) it.reject(redisError(it.context, e));
        }
        if (again.length > 0) {
          if (isCluster(this.target.client)) this.target.client.refreshSlotsCache();
          const tries = Math.max(...again.map((it) => ++it.tries));
          await delay(Math.min(500, 25 * tries));
          this.waiting.unshift(...again);
        }
      }
    } catch (e) {
      for (const it of this.waiting.splice(0)) it.reject(e);
    } finally {
      this.sending = false;
    }
  }

  /** One pipeline: the batch's scripts, then WAIT. Settles each item, or returns it to resend. */
  private async send(batch: AckItem[]): Promise<AckItem[]> {
    const o = this.target.options;
    const client = this.target.client;
    const p = client.pipeline();
    for (const it of batch) it.queue(p);
    p.call('WAIT', o.replicaAcks, o.replicaAckTimeoutMs);
    const timeout = o.commandTimeoutMs + o.replicaAckTimeoutMs;
    const res = (await bounded(client, timeout, batch[0]!.context, () => p.exec())) ?? [];
    const [waitErr, acks] = res[batch.length] ?? [new Error('no reply to WAIT'), 0];
    const again: AckItem[] = [];
    batch.forEach((it, i) => {
      const [err, reply] = res[i] ?? [new Error('no reply'), undefined];
      if (err && REFUSED.test(err.message) && Date.now() < it.deadline) {
        again.push(it);
      } else if (err) {
        it.reject(redisError(it.context, err));
      } else if (waitErr) {
        it.reject(redisError(`${it.context}: WAIT`, waitErr));
      } else if (
        typeof reply === 'number' &&
        reply < 0 &&
        reply !== SCRIPT_CODES.LEASE_LOST.reply
      ) {
        it.reject(scriptError(reply, it.context));
      } else {
        it.resolve({ reply, acks: Number(acks) });
      }
    });
    return again;
  }
}

/**
 * The reply of a write that `replicaAcks` replicas confirmed; NOT_REPLICATED when fewer did within
 * `replicaAckTimeoutMs` (the write happened on the master: it runs unless a failover loses it).
 */
export function confirmed(acked: Acked, call: AckCall, o: AckTarget['options']): unknown {
  if (acked.acks >= o.replicaAcks) return acked.reply;
  throw new WorkQueueError(
    'NOT_REPLICATED',
    `${call.context}: stored on the master but confirmed by ${acked.acks} of ${o.replicaAcks} replica(s) within ${o.replicaAckTimeoutMs} ms; it is lost if the master fails before replicating it. ${call.again}`,
  );
}
