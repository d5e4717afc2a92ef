/**
 * History with groups and flows (docs/history.md#kept-completed-jobs): a kept job keeps its
 * group and parent and has left its group; a kept flow job has ended for its flow (a cancel of
 * its parent, a drain leave it alone); rerun of a grouped job waits in its group, of a flow job
 * runs as a plain job; events carry the group beside the times.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { QueueEvents, type QueueEvent } from '../../../lib/index.js';
import { FlowFixture } from '../../support/flows.js';
import { waitFor } from '../../support/wait.js';

const fx = new FlowFixture();
afterAll(() => fx.cleanup());

describe('kept grouped jobs', () => {
  it('keep their group, leave its running count, and carry it in their events with their times', async () => {
    const q = fx.queue<string, string>('h-grouped');
    const events = new QueueEvents(fx.client, q.name, { prefix: q.options.prefix });
    const seen: QueueEvent[] = [];
    events.on('event', (e) => seen.push(e));
    await events.ready();
    try {
      await q.add('a', { id: 'ga', group: 'tenant' });
      const [lease] = await q.lease({ count: 1, leaseMs: 60_000, workerId: '0' });
      expect(await q.getGroups()).toMatchObject([{ group: 'tenant', running: 1 }]);
      const r = await q.completeAndLease([{ lease: lease!, result: 'done' }]);
      expect(r.completed).toEqual([true]);
      expect(await q.getJob('ga')).toMatchObject({
        state: 'completed',
        group: 'tenant',
        result: 'done',
      });
      // Left its group: not running there (a group with nothing left goes at its next turn).
      expect((await q.getGroups()).filter((g) => g.running + g.pending > 0)).toEqual([]);
      expect((await q.getJobs('completed')).map((j) => [j.id, j.group])).toEqual([
        ['ga', 'tenant'],
      ]);
      await waitFor(() => seen.some((e) => e.kind === 'completed'), { what: 'completed event' });
      const done = seen.find((e) => e.kind === 'completed') as unknown as Record<string, unknown>;
      expect(done).toMatchObject({ id: 'ga', group: 'tenant', result: 'done' });
      expect(typeof done.addedAt).toBe('number');
      expect(typeof done.startedAt).toBe('number');
      const active = seen.find((e) => e.kind === 'active') as unknown as Record<string, unknown>;
      expect(active).toMatchObject({ id: 'ga', group: 'tenant' });
      expect(typeof active.addedAt).toBe('number');
    } finally {
      await events.close();
    }
    // A rerun waits in its group again; the kept job stays kept.
    expect(await q.rerun('ga')).toBe('ga');
    expect(await q.getJob('ga')).toMatchObject({ state: 'pending', group: 'tenant' });
    expect(await q.getGroups()).toMatchObject([{ group: 'tenant', pending: 1, running: 0 }]);
    expect((await q.counts()).completed).toBe(1);
    // drainGroup and drain take the waiting rerun, never the kept job.
    expect(await q.drainGroup('tenant')).toBe(1);
    await q.add('b');
    expect(await q.drain({ delayed: true })).toBe(1);
    expect(await q.counts()).toMatchObject({ pending: 0, completed: 1 });
    expect(await q.getJobs('completed')).toHaveLength(1);
  });
});

describe('events of a grouped job', () => {
  it('failed and dead carry the group beside the times', async () => {
    const q = fx.queue<string>('h-gfail');
    const events = new QueueEvents(fx.client, q.name, { prefix: q.options.prefix });
    const seen: QueueEvent[] = [];
    events.on('event', (e) => seen.push(e));
    await events.ready();
    try {
      await q.add('x', { id: 'gx', group: 'tenant' });
      const [lease] = await q.lease({ count: 1, leaseMs: 60_000, workerId: '0' });
      expect(await q.fail(lease!, new Error('nope'), { retryable: false })).toBe('dead');
      await waitFor(() => seen.some((e) => e.kind === 'dead'), { what: 'the dead event' });
    } finally {
      await events.close();
    }
    for (const kind of ['failed', 'dead'] as const) {
      const e = seen.find((x) => x.kind === kind) as unknown as Record<string, unknown>;
      expect({ kind, id: e.id, group: e.group }).toEqual({ kind, id: 'gx', group: 'tenant' });
      expect({ kind, added: typeof e.addedAt, started: typeof e.startedAt }).toEqual({
        kind,
        added: 'number',
        started: 'number',
      });
    }
    expect((await q.getGroups()).filter((g) => g.running + g.pending > 0)).toEqual([]);
  });
});

/** A flow of one parent and two children; the first child leased and completed (kept). */
async function keptChild(parentQueue: string, childQueue: string) {
  const tree = await fx.producer().add({
    queue: parentQueue,
    data: 'p',
    children: [
      { queue: childQueue, data: 1 },
      { queue: childQueue, data: 2 },
    ],
  });
  const kids = fx.queue<number, number>(childQueue);
  const [lease] = await kids.lease({ count: 1, leaseMs: 60_000 });
  // The worker's call, its notice not delivered yet (as if it died right after).
  expect((await kids.completeAndLease([{ lease: lease!, result: 10 }])).completed).toEqual([true]);
  return { tree, kids, parents: fx.queue(parentQueue), seq: lease!.seq };
}

describe('kept flow jobs', () => {
  it('a kept child is not cancelled with its parent, even with its notice undelivered', async () => {
    const { tree, kids, parents, seq } = await keptChild('h-cp', 'h-ck');
    expect(await kids.getJob(seq)).toMatchObject({
      state: 'completed',
      result: 10,
      parent: { queue: 'h-cp', id: tree.job.id },
    });
    expect(await parents.cancel(tree.job.id)).toBe(true);
    const waiting = tree.children![1]!.job.id;
    await waitFor(async () => (await kids.getJob(waiting)) === null, {
      what: 'the waiting child to be cancelled',
    });
    await parents.clean();
    await kids.clean();
    expect(await kids.getJob(seq)).toMatchObject({
      state: 'completed',
      result: 10,
      data: 1,
      parent: { queue: 'h-cp', id: tree.job.id },
    });
    expect((await kids.counts()).completed).toBe(1);
    expect((await kids.repair()).fixes).toEqual([]);
  });

  it('rerun of a kept child runs it as a plain job: no parent, its parent told nothing', async () => {
    const { tree, kids, parents, seq } = await keptChild('h-rp', 'h-rk');
    await kids.deliverFlowNotices([seq]);
    const before = (await parents.getJob(tree.job.id))?.children;
    expect(before).toMatchObject({ pending: 1, completed: 1 });
    const again = await kids.rerun(seq);
    expect(again).not.toBeNull();
    const fresh = await kids.getJob(again!);
    expect(fresh).toMatchObject({ state: 'pending', data: 1 });
    expect(fresh?.parent).toBeUndefined();
    // Run both waiting children's leases: the rerun's completion tells the parent nothing.
    const leases = await kids.lease({ count: 2, leaseMs: 60_000 });
    const rerun = leases.find((l) => l.id === again)!;
    expect(rerun.parent).toBeUndefined();
    expect((await kids.completeAndLease([{ lease: rerun, result: 11 }])).completed).toEqual([true]);
    await kids.clean();
    expect((await parents.getJob(tree.job.id))?.children).toEqual(before);
    // The other child completes: the parent runs once, with the first child's result only.
    const other = leases.find((l) => l.id !== again)!;
    expect(await kids.complete(other, 20)).toBe(true);
    await waitFor(async () => (await parents.getJob(tree.job.id))?.state === 'pending', {
      what: 'the parent to be pending',
    });
    expect(Object.values(await parents.getChildrenResults(tree.job.id)).sort()).toEqual([10, 20]);
  });

  it('a kept parent keeps its state, without children counts; its results went with its end', async () => {
    const { tree, kids, parents, seq } = await keptChild('h-kp', 'h-kk');
    await kids.deliverFlowNotices([seq]);
    const [other] = await kids.lease({ count: 1, leaseMs: 60_000 });
    expect(await kids.complete(other!, 20)).toBe(true);
    const [parent] = await parents.lease({ count: 1, leaseMs: 60_000 });
    expect(parent?.id).toBe(tree.job.id);
    expect(await parents.complete(parent!, 'both')).toBe(true);
    const kept = await parents.getJob(tree.job.id);
    expect(kept).toMatchObject({ state: 'completed', result: 'both' });
    expect(kept?.children).toBeUndefined();
    expect(await parents.getChildrenResults(tree.job.id)).toEqual({});
    expect((await parents.getJobs('completed')).map((j) => j.id)).toEqual([tree.job.id]);
  });
});
