/**
 * Groups (issue 27) in flows (issue 26): a flow node may have a group; a grouped leaf waits in its
 * group (fairness and the group's limits hold), a grouped parent joins its group once its children
 * ended, and draining a group tells the parents of the drained children.
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { WorkQueueError } from '../../../lib/index.js';
import { errorOf } from '../../support/core.js';
import { FlowFixture } from '../../support/flows.js';
import { waitFor } from '../../support/wait.js';

const fx = new FlowFixture({ maxAttempts: 1, groups: { concurrency: 1 } });
afterEach(() => fx.closeWorkers());
afterAll(() => fx.cleanup());

describe('flow nodes with a group', () => {
  it('a bad group is refused with its path, nothing written', async () => {
    const e = await errorOf(
      fx.producer().add({
        queue: 'gf-bad',
        data: 'p',
        group: '' as string,
        children: [
          { queue: 'gf-bad', data: 1, group: 'x'.repeat(257) },
          // BullMQ Pro's shape, named as such (as add() names it)
          { queue: 'gf-bad', data: 2, group: { id: 'x' } as unknown as string },
        ],
      }),
    );
    expect(e).toBeInstanceOf(WorkQueueError);
    expect((e as WorkQueueError).problems).toEqual([
      'group must be a non-empty string of at most 256 bytes, got 0 bytes',
      'children[0].group must be a non-empty string of at most 256 bytes, got 257 bytes',
      "children[1].group must be a string (BullMQ Pro's group: { id } is group: id here)",
    ]);
    expect(await fx.queue('gf-bad').counts()).toMatchObject({ pending: 0, waitingChildren: 0 });
  });

  it('grouped children run one at a time per group (concurrency 1), the grouped parent last', async () => {
    const kids = fx.queue<number>('gf-kids');
    const tree = await fx.producer().add({
      queue: 'gf-parent',
      data: 'p',
      group: 'tenant-p',
      children: [1, 2, 3, 4].map((n) => ({
        queue: 'gf-kids',
        data: n,
        group: n % 2 ? 'tenant-a' : 'tenant-b',
      })),
    });
    const groups = await kids.getGroups();
    expect(groups.map((g) => [g.group, g.pending])).toEqual([
      ['tenant-a', 2],
      ['tenant-b', 2],
    ]);
    // Per group at most one running at a time, across the worker's 4 slots.
    const running = new Map<string, number>();
    let most = 0;
    const order: number[] = [];
    fx.worker<number, number>('gf-kids', async (job) => {
      const g = job.group!;
      running.set(g, (running.get(g) ?? 0) + 1);
      most = Math.max(most, running.get(g)!);
      await new Promise((r) => setTimeout(r, 20));
      order.push(job.data);
      running.set(g, running.get(g)! - 1);
      return job.data * 10;
    });
    const seen: Array<{ group: string | undefined; results: Record<string, unknown> }> = [];
    fx.worker('gf-parent', async (job) => {
      seen.push({ group: job.group, results: await job.getChildrenResults() });
      return 'done';
    });
    await waitFor(
      async () => (await fx.queue('gf-parent').getJob(tree.job.id))?.state === 'completed',
      { what: 'the parent to complete' },
    );
    // Kept (keepCompleted) with its group; the kept children left their groups' running counts.
    expect(await fx.queue('gf-parent').getJob(tree.job.id)).toMatchObject({
      state: 'completed',
      group: 'tenant-p',
      result: 'done',
    });
    const kept = await kids.getJobs('completed');
    expect(kept.map((j) => [j.group, j.result]).sort()).toEqual([
      ['tenant-a', 10],
      ['tenant-a', 30],
      ['tenant-b', 20],
      ['tenant-b', 40],
    ]);
    expect(await kids.getGroups()).toEqual([]);
    expect(most).toBe(1);
    expect(order.filter((n) => n % 2).sort()).toEqual([1, 3]);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.group).toBe('tenant-p');
    expect(Object.values(seen[0]!.results).sort()).toEqual([10, 20, 30, 40]);
  });

  it('drainGroup of a grouped child fails its parent (fail-parent), like cancel', async () => {
    const tree = await fx.producer().add({
      queue: 'gd-parent',
      data: 'p',
      children: [
        { queue: 'gd-kids', data: 1, group: 'tenant-d', id: 'drained' },
        { queue: 'gd-kids', data: 2, id: 'sibling' },
      ],
    });
    expect(await fx.queue('gd-kids').drainGroup('tenant-d')).toBe(1);
    const parent = await waitFor(
      async () => {
        const j = await fx.queue('gd-parent').getJob(tree.job.id);
        return j?.state === 'dead' ? j : undefined;
      },
      { what: 'the parent to fail' },
    );
    expect(parent.deadReason).toBe('child gd-kids/drained failed: cancelled (group drained)');
    await waitFor(async () => (await fx.queue('gd-kids').getJob('sibling')) === null, {
      what: 'the sibling cancelled',
    });
  });
});
