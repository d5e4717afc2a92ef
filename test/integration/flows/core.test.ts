/**
 * Flows on real Redis: results reach the parent, the parent runs once after every child, nesting,
 * 1 000 children on one parent, what getJob / getJobs / counts / events show.
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { QueueEvents, type FlowNode, type QueueEvent } from '../../../lib/index.js';
import { FlowFixture } from '../../support/flows.js';
import { waitFor } from '../../support/wait.js';

const fx = new FlowFixture();
afterEach(() => fx.closeWorkers());
afterAll(() => fx.cleanup());

describe('a flow', () => {
  it('runs the parent once, after its children in two queues, with their results', async () => {
    const flows = fx.producer();
    const tree = await flows.add({
      queue: 'c-orders',
      data: { order: 1 },
      name: 'ship',
      children: [
        { queue: 'c-payments', data: { amount: 5 }, id: 'pay-1' },
        { queue: 'c-stock', data: { sku: 'x' } },
        { queue: 'c-stock', data: { sku: 'y' } },
      ],
    });
    const stockIds = tree.children!.slice(1).map((c) => c.job.id);
    expect(tree.children!.map((c) => c.job.queue)).toEqual(['c-payments', 'c-stock', 'c-stock']);
    const orders = fx.queue('c-orders');
    const waiting = await orders.getJob(tree.job.id);
    expect(waiting).toMatchObject({
      state: 'waiting-children',
      name: 'ship',
      data: { order: 1 },
      children: { pending: 3, completed: 0, failed: 0, cancelled: 0 },
    });
    expect((await orders.counts()).waitingChildren).toBe(1);
    expect((await orders.getJobs('waiting-children')).map((j) => j.id)).toEqual([tree.job.id]);
    expect(waiting!.at).toBeUndefined();
    expect(await fx.queue('c-payments').getJob('pay-1')).toMatchObject({
      state: 'pending',
      parent: { queue: 'c-orders', id: tree.job.id },
    });
    const ended: string[] = [];
    const runs: unknown[] = [];
    fx.worker('c-payments', (job) => {
      expect(job.parent).toEqual({ queue: 'c-orders', id: tree.job.id });
      ended.push(`pay:${job.id}`);
      return { paid: 5 };
    });
    fx.worker('c-stock', (job) => {
      ended.push(`stock:${job.id}`);
      return (job.data as { sku: string }).sku;
    });
    fx.worker('c-orders', async (job) => {
      runs.push({ ended: [...ended], results: await job.getChildrenResults() });
      expect(await job.getChildrenFailures()).toEqual({});
      return 'shipped';
    });
    await waitFor(() => runs.length === 1, { what: 'the parent to run' });
    expect(runs[0]).toEqual({
      ended: expect.arrayContaining(['pay:pay-1', ...stockIds.map((i) => `stock:${i}`)]),
      results: {
        'c-payments:pay-1': { paid: 5 },
        [`c-stock:${stockIds[0]}`]: 'x',
        [`c-stock:${stockIds[1]}`]: 'y',
      },
    });
    expect((runs[0] as { ended: string[] }).ended).toHaveLength(3);
    // Kept (keepCompleted) like any job, as completed; its children counts went with its keys.
    await waitFor(async () => (await orders.getJob(tree.job.id))?.state === 'completed', {
      what: 'done',
    });
    const kept = await orders.getJob(tree.job.id);
    expect(kept).toMatchObject({ state: 'completed', result: 'shipped' });
    expect(kept?.children).toBeUndefined();
    expect(await fx.queue('c-payments').getJob('pay-1')).toMatchObject({
      state: 'completed',
      result: { paid: 5 },
      parent: { queue: 'c-orders', id: tree.job.id },
    });
    expect(runs).toHaveLength(1);
    // Its children's results went when it ended.
    expect(await fx.client.exists(orders.keys.parentKey('results', tree.job.id))).toBe(0);
  });

  it('nests five levels deep: each level runs after the one below, results passed up', async () => {
    const flows = fx.producer();
    const chain = (level: number): FlowNode => ({
      queue: level % 2 === 0 ? 'n-even' : 'n-odd',
      data: { level },
      ...(level < 5 ? { children: [chain(level + 1), { queue: 'n-leaf', data: { level } }] } : {}),
    });
    const tree = await flows.add(chain(1));
    const order: number[] = [];
    const handler = async (job: { data: unknown; getChildrenResults(): Promise<object> }) => {
      const { level } = job.data as { level: number };
      const below = Object.values(await job.getChildrenResults()) as number[];
      order.push(level);
      return level + below.reduce((a, b) => a + b, 0);
    };
    fx.worker('n-even', handler);
    fx.worker('n-odd', handler);
    fx.worker('n-leaf', () => 0);
    await waitFor(() => order.includes(1), { what: 'the root to run', timeoutMs: 10_000 });
    expect(order).toEqual([5, 4, 3, 2, 1]);
    expect(tree.children![0]!.children![0]!.children![0]!.children![0]!.job.queue).toBe('n-odd');
  });

  it('waits for 1 000 children on one parent, then has all their results', async () => {
    const flows = fx.producer();
    const children = Array.from({ length: 1000 }, (_, i) => ({ queue: 'k-kids', data: i }));
    const tree = await flows.add({ queue: 'k-parent', data: null, children });
    expect((await fx.queue('k-parent').getJob(tree.job.id))?.children?.pending).toBe(1000);
    let results: Record<string, unknown> | undefined;
    fx.worker('k-kids', (job) => (job.data as number) * 2, { concurrency: 50 });
    fx.worker('k-parent', async (job) => {
      results = await job.getChildrenResults();
    });
    await waitFor(() => results, { what: 'the parent to run', timeoutMs: 20_000 });
    const values = Object.values(results!) as number[];
    expect(values).toHaveLength(1000);
    expect(values.sort((a, b) => a - b)).toEqual(children.map((c) => c.data * 2));
  });

  it('a parent with delayMs waits that long after its children; priority is kept', async () => {
    const flows = fx.producer();
    const tree = await flows.add({
      queue: 'd-parent',
      data: 'p',
      delayMs: 60_000,
      priority: 2,
      children: [{ queue: 'd-kids', data: 'c' }],
    });
    const parents = fx.queue('d-parent');
    // Waiting for its children: no due time to change (it was answered false, as if unknown).
    await expect(parents.changeDelay(tree.job.id, 10)).rejects.toMatchObject({
      code: 'BAD_STATE',
      message: expect.stringContaining('waiting-children') as unknown as string,
    });
    fx.worker('d-kids', () => 'ok');
    const info = await waitFor(
      async () => {
        const j = await parents.getJob(tree.job.id);
        return j?.state === 'delayed' ? j : undefined;
      },
      { what: 'the parent to be delayed' },
    );
    expect(info.priority).toBe(2);
    expect(info.children).toEqual({ pending: 0, completed: 1, failed: 0, cancelled: 0 });
    expect(await parents.getChildrenResults(tree.job.id)).toEqual({
      [`d-kids:${tree.children![0]!.job.id}`]: 'ok',
    });
    expect(await parents.promote(tree.job.id)).toBe(true);
  });

  it('logs waiting-children for a parent, then promoted once its children ended', async () => {
    const flows = fx.producer();
    const events = new QueueEvents(fx.client, 'e-parent', { prefix: fx.prefix, from: '0' });
    const seen: QueueEvent[] = [];
    events.on('event', (e) => seen.push(e));
    try {
      const tree = await flows.add({
        queue: 'e-parent',
        data: 1,
        children: [{ queue: 'e-kids', data: 2 }],
      });
      fx.worker('e-kids', () => 'x');
      await waitFor(() => seen.some((e) => e.kind === 'promoted'), { what: 'promoted' });
      expect(seen.map((e) => [e.kind, e.id])).toEqual([
        ['added', tree.job.id],
        ['waiting-children', tree.job.id],
        ['promoted', tree.job.id],
      ]);
    } finally {
      await events.close();
    }
  });

  it('addBulk writes several flows; ids are caller ids or numbers', async () => {
    const flows = fx.producer();
    const added = await flows.addBulk([
      { queue: 'b-p', data: 1, id: 'root-a', children: [{ queue: 'b-c', data: 1, id: 'kid-a' }] },
      { queue: 'b-p', data: 2, children: [{ queue: 'b-c', data: 2 }] },
    ]);
    expect(added[0]).toEqual({
      job: { queue: 'b-p', id: 'root-a' },
      children: [{ job: { queue: 'b-c', id: 'kid-a' } }],
    });
    expect(added[1]!.job.id).toMatch(/^\d+$/);
    expect((await fx.queue('b-p').counts()).waitingChildren).toBe(2);
    expect((await fx.queue('b-c').counts()).pending).toBe(2);
    expect(await flows.addBulk([])).toEqual([]);
  });

  it('lists the waiting parents in the order they were added, across calls and within one', async () => {
    // (Scored by the ms, the parents of one call tied and listed as strings: 1, 10, 11, 2, ….)
    const flows = fx.producer();
    const tree = (i: number) => ({ queue: 'o-p', data: i, children: [{ queue: 'o-c', data: i }] });
    const one = await flows.addBulk(Array.from({ length: 12 }, (_, i) => tree(i)));
    const more = [await flows.add(tree(12)), await flows.add(tree(13))];
    const ids = [...one, ...more].map((f) => f.job.id);
    const parents = fx.queue('o-p');
    expect((await parents.getJobs('waiting-children')).map((j) => j.id)).toEqual(ids);
    const page = await parents.getJobs('waiting-children', { offset: 5, limit: 5 });
    expect(page.map((j) => j.id)).toEqual(ids.slice(5, 10));
  });
});
