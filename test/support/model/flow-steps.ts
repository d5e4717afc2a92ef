/**
 * The flow step of test/integration/model/model.test.ts: a FlowProducer adds a parent and its
 * children, all in the model's queue, with random policies (flows.ts models what follows).
 */
import { expect } from '@jest/globals';
import { FlowProducer, type FlowNode } from '../../../lib/index.js';
import { Checked } from './commands.js';
import { redisTime, type Real } from './snapshot.js';
import type { Policy } from './flows.js';
import type { AddSpec, Model } from './model.js';

export interface FlowSpec {
  parent: AddSpec;
  children: Array<{ spec: AddSpec; policy: Policy }>;
}

const POLICY = { f: 'fail-parent', i: 'ignore', r: 'remove' } as const;

function node(queue: string, s: AddSpec, data: unknown): FlowNode {
  const n: FlowNode = { queue, data, priority: s.priority };
  if (s.delayMs !== undefined) n.delayMs = s.delayMs;
  if (s.maxAttempts !== undefined) n.maxAttempts = s.maxAttempts;
  if (s.retryMs > 0) n.backoff = { type: 'fixed', delayMs: s.retryMs };
  if (s.group !== undefined) n.group = s.group;
  return n;
}

export class AddFlow extends Checked {
  constructor(readonly flow: FlowSpec) {
    super();
  }
  async act(m: Model, r: Real): Promise<void> {
    const flows = new FlowProducer(r.q.client, { prefix: r.q.options.prefix, logger: false });
    const pData = m.newData();
    const datas = this.flow.children.map(() => m.newData());
    const parent: FlowNode = {
      ...node(r.q.name, { ...this.flow.parent, delayMs: undefined }, pData),
      children: this.flow.children.map((c, i) => ({
        ...node(r.q.name, c.spec, datas[i]),
        onFailure: POLICY[c.policy],
      })),
    };
    const t0 = await redisTime(r);
    const added = await flows.add(parent);
    const t1 = await redisTime(r);
    const seqs = added.children!.map((c) => c.job.id);
    const dues = await Promise.all(
      this.flow.children.map(async (c, i) =>
        c.spec.delayMs ? (await r.q.getJob(seqs[i]!))?.at : undefined,
      ),
    );
    // Children first: their seqs come before their parent's.
    m.flowCall(this.flow.children.length + 1);
    this.flow.children.forEach((c, i) =>
      m.added(c.spec, datas[i]!, seqs[i]!, dues[i], undefined, [t0, t1]),
    );
    const p = { ...this.flow.parent, delayMs: undefined };
    m.added(p, pData, added.job.id, undefined, 'waiting-children', [t0, t1]);
    m.addCallDone();
    m.flows.added(
      added.job.id,
      this.flow.children.map((c, i) => ({ seq: seqs[i]!, policy: c.policy })),
    );
    expect(seqs.every((s) => Number(s) < Number(added.job.id))).toBe(true);
    r.note(`flow: ${this.flow.children.length} children`);
  }
  toString(): string {
    const kids = this.flow.children.map(
      (c) => `${c.policy}p${c.spec.priority}${c.spec.delayMs ? `d${c.spec.delayMs}` : ''}`,
    );
    return `addFlow(p${this.flow.parent.priority}: ${kids.join(' ')})`;
  }
}
