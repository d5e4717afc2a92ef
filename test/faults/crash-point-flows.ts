/**
 * The flow operations of the crash-point test (crash-point-flows.test.ts): each one's scripts —
 * in the queue and in the other queue of its flow — run whole or not at all wherever the client
 * dies.
 * The flow: a parent in the test's queue, two children in `<queue>-k`, one in the queue itself.
 */
import { FlowProducer, NonRetryableError, WorkQueue } from '../../lib/index.js';

const kids = (q: WorkQueue<unknown>) =>
  new WorkQueue<unknown>(q.client, `${q.name}-k`, { prefix: q.options.prefix, logger: false });

async function addFlow(q: WorkQueue<unknown>): Promise<void> {
  const flows = new FlowProducer(q.client, { prefix: q.options.prefix, logger: false });
  await flows.add({
    queue: q.name,
    data: 'parent',
    id: 'flow-p',
    children: [
      { queue: `${q.name}-k`, data: 1, id: 'k1' },
      { queue: `${q.name}-k`, data: 2, id: 'k2', delayMs: 60_000 },
      { queue: q.name, data: 3, id: 'k3', onFailure: 'ignore' },
    ],
  });
}

/** Add the flow, lease its first child. */
async function leasedChild(q: WorkQueue<unknown>) {
  await addFlow(q);
  const k = kids(q);
  const [lease] = await k.lease({ count: 1, leaseMs: 60_000 });
  return { k, lease: lease! };
}

export const FLOW_OPS: Array<{ name: string; run(q: WorkQueue<unknown>): Promise<unknown> }> = [
  { name: 'flow: add (flow_reserve, flow_add)', run: addFlow },
  {
    name: 'flow: a child completes, its parent learns (complete_and_lease, flow_notice, flow_ack, flow_children)',
    run: async (q) => {
      const { k, lease } = await leasedChild(q);
      await k.complete(lease, { done: 1 });
      return q.getChildrenResults('flow-p');
    },
  },
  {
    name: 'flow: a dead child fails its parent, which cancels the rest (fail, flow_notice, flow_due, flow_cancel, flow_ack)',
    run: async (q) => {
      const { k, lease } = await leasedChild(q);
      return k.fail(lease, new NonRetryableError('child failed'));
    },
  },
  {
    name: 'flow: cancel a waiting parent (cancel, flow_due, flow_cancel, flow_ack)',
    run: async (q) => {
      await addFlow(q);
      return q.cancel('flow-p');
    },
  },
  {
    name: 'flow: drain a queue of children (drain, flow_due, flow_notice, flow_ack)',
    run: async (q) => {
      await addFlow(q);
      return kids(q).drain({ delayed: true });
    },
  },
  {
    name: 'flow: repair delivers a notice left over (flow_due, flow_notice, flow_ack, flow_probe)',
    run: async (q) => {
      const { k, lease } = await leasedChild(q);
      // Completed without the delivery that follows (as if its worker died right then).
      await k.completeAndLease([{ lease, result: 'r' }]);
      await k.repair();
      return q.repair();
    },
  },
  {
    name: 'flow: a kept child, its parent cancelled before its notice (complete_and_lease, cancel, flow_cancel)',
    run: async (q) => {
      const { k, lease } = await leasedChild(q);
      await k.completeAndLease([{ lease, result: 'kept' }]);
      return q.cancel('flow-p');
    },
  },
  {
    name: 'flow: a kept child whose notice was lost, written again (flow_probe, flow_notice)',
    run: async (q) => {
      const { k, lease } = await leasedChild(q);
      await k.completeAndLease([{ lease, result: 'kept' }]);
      await q.client.hdel(k.keys.key('flowOutbox'), lease.seq);
      await q.client.zrem(k.keys.key('flowOutboxAt'), lease.seq);
      return q.repair();
    },
  },
  {
    name: 'flow: rerun of a kept child runs it plain (completed_jobs)',
    run: async (q) => {
      const { k, lease } = await leasedChild(q);
      await k.complete(lease, 'kept');
      return k.rerun('k1');
    },
  },
];
