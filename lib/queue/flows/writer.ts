/**
 * Writing a planned flow (docs/internals/flows.md): reserve the seqs of its nodes (flow_reserve:
 * one range per level of each queue, after checking that no caller id is taken), then write the
 * levels bottom-up (flow_add) so that a parent never exists before the children it awaits. On one
 * Redis each step is one script (the whole flow, all or nothing); on a Cluster one script per
 * queue for the reservation, one per (level, queue) for the writes, level after level.
 * With `replicaAcks`, each flow_add is followed by WAIT on the node that ran it (which confirms
 * that node's reservation too); a block too few replicas confirmed was written all the same: the
 * rest of the flow is written, then the add rejects with NOT_REPLICATED. Adding it again is then
 * safe when every node has a caller id: a flow whose every caller id is taken is taken as the
 * same flow added before — nothing is written, and the add resolves once replicas confirm.
 */
import { invalid, WorkQueueError } from '../../errors.js';
import { isCluster } from '../../redis/connection.js';
import type { ScriptArgs } from '../../scripts/define.js';
import { delay } from '../../util/timeout.js';
import { confirmed, type AckCall, type Acked } from '../replica-acks.js';
import type { FlowDelivery } from './delivery.js';
import { ORPHAN_MS } from './delivery.js';
import type { FlowRunner } from './runner.js';
import type { FlowPlan, PlannedNode } from './tree.js';
import {
  CLAIM_MS,
  claimsOf,
  refused,
  releaseBlocks,
  reserveBlocks,
  type Block,
  type Claims,
} from './reserve.js';

/** Tries of one write whose reply did not come (it is idempotent: its reservation says). */
const WRITE_TRIES = 4;

/** How NOT_REPLICATED of a flow add reads. */
const acksCall = (queues: readonly string[]): AckCall => ({
  context: `queue ${queues.join(', ')}: flow add`,
  again:
    'Add the flow again, every node with its caller id, to retry without a duplicate (a flow whose caller ids are all taken is taken as added before).',
});

const notReplicated = (e: unknown): boolean =>
  e instanceof WorkQueueError && e.code === 'NOT_REPLICATED';

export class FlowWriter {
  constructor(
    private readonly runner: FlowRunner,
    private readonly delivery: FlowDelivery,
  ) {}

  /** Reserve and write `plan`; its nodes get their seqs. */
  async write(plan: FlowPlan): Promise<void> {
    const blocks = blocksOf(plan);
    const queues = [...new Set(blocks.map((b) => b.queue))];
    const claims = claimsOf(this.runner, plan);
    // Nothing written after half the reservations' life (its roots' claims', when it has some).
    const deadline = performance.now() + (claims?.ids.size ? CLAIM_MS : ORPHAN_MS) / 2;
    if (!(await this.reserve(plan, blocks, queues, claims))) return;
    for (const n of plan.nodes) {
      if (n.parent >= 0) {
        const p = plan.nodes[n.parent]!;
        n.meta.P = `${p.queue}\t${p.seq}\t${p.cid}`;
      }
      if (n.children.length > 0) n.meta.W = n.delayMs;
    }
    if (!isCluster(this.runner.client)) {
      await this.writeBlocks(plan, blocks, queues, deadline);
      return;
    }
    const written: Block[] = [];
    // A block NOT_REPLICATED was written: the flow goes on, and the add rejects at the end.
    let unconfirmed: unknown;
    try {
      for (const depth of [...new Set(blocks.map((b) => b.depth))]) {
        const level = blocks.filter((b) => b.depth === depth);
        const outcomes = await Promise.allSettled(
          level.map((b) => this.writeBlocks(plan, [b], [b.queue], deadline)),
        );
        let failed: PromiseRejectedResult | undefined;
        outcomes.forEach((o, i) => {
          if (o.status === 'rejected' && !notReplicated(o.reason)) {
            failed ??= o;
            return;
          }
          written.push(level[i]!);
          if (o.status === 'rejected') unconfirmed ??= o.reason;
        });
        if (failed) throw failed.reason;
      }
    } catch (e) {
      await this.undo(plan, written);
      await releaseBlocks(this.runner, blocks, claims);
      throw e;
    }
    if (unconfirmed) throw unconfirmed;
  }

  /**
   * Check the caller ids and reserve one seq range per block (reserve.ts); give each node its
   * seq. False: with `replicaAcks`, every caller id is taken (the flow was added before),
   * confirmed by replicas.
   */
  private async reserve(
    plan: FlowPlan,
    blocks: Block[],
    queues: string[],
    claims: Claims | undefined,
  ): Promise<boolean> {
    const taken = await reserveBlocks(this.runner, plan, blocks, queues, claims);
    const byJob = taken.filter((t) => t.why === 't');
    if (byJob.length === plan.nodes.length && this.runner.options.replicaAcks > 0) {
      // (Every node has a caller id: each taken one is listed once.)
      await this.confirmAdded(plan, queues);
      return false;
    }
    if (taken.length > 0) throw refused(plan, taken, (i) => pathOf(plan.nodes[i]!, 'id'));
    for (const b of blocks) {
      const first = Number(b.reservation.split(':')[0]);
      b.nodes.forEach((n, k) => (plan.nodes[n]!.seq = String(first + k)));
    }
    return true;
  }

  /**
   * A flow added before (a call again after NOT_REPLICATED): WAIT for the replicas on the node of
   * each of its queues (behind a read of one of its jobs there, which takes it to that node).
   * WAIT confirms what this connection wrote: the first call's writes when it is the same client.
   */
  private async confirmAdded(plan: FlowPlan, queues: string[]): Promise<void> {
    const nodes = isCluster(this.runner.client) ? queues : queues.slice(0, 1);
    const acked = await Promise.all(
      nodes.map((q) => {
        const id = plan.nodes.find((n) => n.queue === q)!.cid;
        return this.runner.runAcked([q], 'get_job', [id], false);
      }),
    );
    for (const a of acked) confirmed(a, acksCall(queues), this.runner.options);
  }

  /** Write `blocks` (of `queues`) in one call, tried again while its reply does not come. */
  private async writeBlocks(
    plan: FlowPlan,
    blocks: Block[],
    queues: string[],
    deadline: number,
  ): Promise<void> {
    const args: ScriptArgs['flow_add'] = [blocks.length];
    for (const b of blocks) {
      args.push(queues.indexOf(b.queue) + 1, b.reservation, b.nodes.length);
      for (const i of b.nodes) pushNode(args, plan, plan.nodes[i]!);
    }
    const acked = await this.sendWrite(queues, args, deadline);
    const reply = acked.reply as Array<string | number>;
    if (Number(reply[0]) === 0) {
      const taken: string[] = [];
      for (let i = 1; i + 1 < reply.length; i += 2) {
        const b = blocks[Number(reply[i]) - 1]!;
        const node = plan.nodes[b.nodes[Number(reply[i + 1]) - 1]!]!;
        taken.push(
          `${pathOf(node, 'id')}: job ${JSON.stringify(node.cid)} was added meanwhile to queue ${JSON.stringify(node.queue)}`,
        );
      }
      throw invalid(taken, 'flow refused');
    }
    if (Number(reply[0]) === 1 && wrote(reply)) {
      // A parent applied notices of children that ended before it was written (a Cluster).
      for (const q of queues) await this.delivery.flush(q, 'now');
    }
    if (this.runner.options.replicaAcks > 0)
      confirmed(acked, acksCall(queues), this.runner.options);
  }

  /**
   * One flow_add call, sent again while its reply does not come (idempotent); with `replicaAcks`,
   * followed by WAIT (its reply's `acks`).
   */
  private async sendWrite(
    queues: string[],
    args: ScriptArgs['flow_add'],
    deadline: number,
  ): Promise<Acked> {
    for (let attempt = 1; ; attempt++) {
      // A reservation (or claim) past half its life might lapse while this writes.
      if (performance.now() > deadline) {
        throw new WorkQueueError(
          'TIMEOUT',
          'flow add: took too long to write, nothing more written',
        );
      }
      try {
        if (this.runner.options.replicaAcks > 0) {
          return await this.runner.runAcked(queues, 'flow_add', args, true);
        }
        return { reply: await this.runner.runOn(queues, 'flow_add', args), acks: 0 };
      } catch (e) {
        const lost = e instanceof WorkQueueError && e.code === 'REDIS_UNAVAILABLE';
        if (!lost || attempt >= WRITE_TRIES) throw e;
        await delay(100 * 2 ** attempt);
      }
    }
  }

  /** A Cluster write failed half-way: cancel what was written (best effort; else it just runs). */
  private async undo(plan: FlowPlan, written: Block[]): Promise<void> {
    for (const b of written) {
      const seqs = b.nodes.map((i) => plan.nodes[i]!.seq);
      await this.runner
        .run(b.queue, 'flow_cancel', ['cancel', '', seqs.length, ...seqs])
        .catch(() => undefined);
    }
  }
}

/** The blocks of a plan (one per level of each queue), the deepest level first. */
function blocksOf(plan: FlowPlan): Block[] {
  const byKey = new Map<string, Block>();
  plan.nodes.forEach((n, i) => {
    const key = `${n.depth}\n${n.queue}`;
    let b = byKey.get(key);
    if (!b) byKey.set(key, (b = { queue: n.queue, depth: n.depth, nodes: [], reservation: '' }));
    b.nodes.push(i);
  });
  return [...byKey.values()].sort((a, b) => b.depth - a.depth);
}

/** A node as flow_add takes it (see its header). */
function pushNode(args: ScriptArgs['flow_add'], plan: FlowPlan, n: PlannedNode): void {
  const meta = Object.keys(n.meta).length > 0 ? JSON.stringify(n.meta) : '';
  const leafDelay = n.children.length === 0 && n.delayMs > 0 ? n.delayMs : '';
  args.push(n.seq, n.cid, n.payload, meta, n.priority, leafDelay, n.children.length);
  for (const c of n.children) {
    const child = plan.nodes[c]!;
    args.push(`${child.queue}:${child.seq}`, child.policy + (child.cid || child.seq));
  }
}

/** Whether flow_add's reply tail says it wrote notices or cancels (flow_out_reply). */
function wrote(reply: Array<string | number>): boolean {
  const notices = Number(reply[1]);
  return notices > 0 || Number(reply[2 + 2 * notices]) === 1;
}

const pathOf = (n: PlannedNode, field: string) => (n.path === '' ? field : `${n.path}.${field}`);
