import { afterAll, describe, expect, it } from '@jest/globals';
import { FlowFixture } from '../../support/flows.js';
import { waitFor } from '../../support/wait.js';

const fx = new FlowFixture();
afterAll(() => fx.cleanup());

describe('flow smoke', () => {
  it('a parent runs after its children, with their results', async () => {
    const flows = fx.producer();
    const tree = await flows.add({
      queue: 'orders',
      data: { order: 1 },
      children: [
        { queue: 'payments', data: { amount: 5 }, id: 'pay-1' },
        { queue: 'stock', data: { sku: 'x' } },
      ],
    });
    expect(tree.job.queue).toBe('orders');
    const orders = fx.queue('orders');
    expect((await orders.getJob(tree.job.id))?.state).toBe('waiting-children');
    const seen: unknown[] = [];
    fx.worker('payments', (job) => ({ paid: (job.data as { amount: number }).amount }));
    fx.worker('stock', () => 'reserved');
    fx.worker('orders', async (job) => {
      seen.push(await job.getChildrenResults());
      return 'shipped';
    });
    await waitFor(() => seen.length === 1, { what: 'the parent to run' });
    expect(seen[0]).toEqual({
      'payments:pay-1': { paid: 5 },
      [`stock:${tree.children![1]!.job.id}`]: 'reserved',
    });
  });
});
