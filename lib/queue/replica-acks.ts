/**
 * Adds confirmed by replicas (`replicaAcks`): an add script followed by `WAIT replicaAcks
 * replicaAckTimeoutMs` on the same connection, as one pipeline, which a Cluster client sends to
 * the node that serves the queue's slot, so the WAIT counts the replicas of the node that ran
 * the script. Group commit: while one such pipeline is out (WAIT holds its connection), further
 * adds queue up and go together in the next one, behind a single WAIT. A script refused before
 * it ran (slot moved or migrating, cluster down during a failover) is sent again.
 */
import { redisError, SCRIPT_CODES, scriptError, WorkQueueError } from '../errors.js';
import { bounded } from '../redis/bounded.js';
import { queueScript } from '../scripts/define.js';
import { isCluster } from '../redis/info.js';
import { delay } from '../util/timeout.js';
import type { Arg, QueueContext, ScriptArgs } from './context.js';

/** Cluster replies to a command that did not run (safe to send again). */
const REFUSED = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) /;

interface AckItem {
  /** numkeys and KEYS of one add script (ScriptKeys.of). */
  keys: readonly Arg[];
  args: ScriptArgs['add'];
  resolve(reply: unknown): void;
  reject(e: unknown): void;
  /** Past it, a refused script is no longer sent again. */
  deadline: number;
  tries: number;
}

export class ReplicaAcks {
  private readonly waiting: AckItem[] = [];
  private sending = false;

  constructor(private readonly ctx: QueueContext) {}

  add(keys: readonly Arg[], args: ScriptArgs['add']): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const patience = Math.max(10_000, 2 * this.ctx.options.replicaAckTimeoutMs);
      const deadline = Date.now() + patience;
      this.waiting.push({ keys, args, resolve, reject, deadline, tries: 0 });
      if (!this.sending) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.sending = true;
    try {
      await this.ctx.ready();
      while (this.waiting.length > 0) {
        const batch = this.waiting.splice(0);
        let again: AckItem[] = [];
        try {
          again = await this.send(batch);
        } catch (e) {
          for (const it of batch) it.reject(redisError(`queue ${this.ctx.name}: add`, e));
        }
        if (again.length > 0) {
          if (isCluster(this.ctx.client)) this.ctx.client.refreshSlotsCache();
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
    const o = this.ctx.options;
    const want = o.replicaAcks;
    const context = `queue ${this.ctx.name}: add`;
    const p = this.ctx.client.pipeline();
    for (const it of batch) queueScript(p, 'add', it.keys, it.args);
    p.call('WAIT', want, o.replicaAckTimeoutMs);
    const timeout = o.commandTimeoutMs + o.replicaAckTimeoutMs;
    const res = (await bounded(this.ctx.client, timeout, context, () => p.exec())) ?? [];
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
      } else if (
        typeof reply === 'number' &&
        reply < 0 &&
        reply !== SCRIPT_CODES.LEASE_LOST.reply
      ) {
        it.reject(scriptError(reply, context));
      } else if (Number(acks) < want) {
        it.reject(
          new WorkQueueError(
            'NOT_REPLICATED',
            `${context}: stored on the master but confirmed by ${Number(acks)} of ${want} replica(s) within ${o.replicaAckTimeoutMs} ms; it is lost if the master fails before replicating it. Add it again with the same caller id to retry without a duplicate.`,
          ),
        );
      } else {
        it.resolve(reply);
      }
    });
    return again;
  }
}
