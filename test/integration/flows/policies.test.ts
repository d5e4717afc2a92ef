/**
 * What a child's failure does to its parent: fail-parent (the default: the parent is dead at once
 * with the child's reason, its other children that have not started are cancelled, and its own
 * parent applies its own policy), ignore (recorded, the parent runs), remove (dropped).
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { NonRetryableError, QueueEvents, type QueueEvent } from '../../../lib/index.js';
import { FlowFixture } from '../../support/flows.js';
import { waitFor } from '../../support/wait.js';

const fx = new FlowFixture({ maxAttempts: 1 });
afterEach(() => fx.closeWorkers());
afterAll(() => fx.cleanup());

const fail = (): never => {
  throw new NonRetryableError('card declined');
};

describe("a child's failure", () => {
  it('fail-parent: the parent is dead at once with the reason; waiting siblings are cancelled', async () => {
    const flows = fx.producer();
    const events = new QueueEvents(fx.client, 'f-parent', { prefix: fx.prefix, from: '0' });
    const seen: QueueEvent[] = [];
    events.on('event', (e) => seen.push(e));
    try {
      const tree = await flows.add({
        queue: 'f-parent',
        data: 'p',
        children: [
          { queue: 'f-bad', data: 1, id: 'bad-1' },
          { queue: 'f-later', data: 2, id: 'later-1' },
          { queue: 'f-later', data: 3, id: 'later-2', delayMs: 60_000 },
        ],
      });
      fx.worker('f-bad', fail);
      const parents = fx.queue('f-parent');
      const dead = await waitFor(
        async () => {
          const j = await parents.getJob(tree.job.id);
          return j?.state === 'dead' ? j : undefined;
        },
        { what: 'the parent to die' },
      );
      expect(dead.deadReason).toBe('child f-bad/bad-1 failed: card declined');
      expect(dead.children).toEqual({ pending: 0, completed: 0, failed: 1, cancelled: 2 });
      // The siblings that had not started are gone.
      const later = fx.queue('f-later');
      await waitFor(async () => (await later.getJob('later-1')) === null, { what: 'cancelled' });
      expect(await later.getJob('later-2')).toBeNull();
      await waitFor(() => seen.some((e) => e.kind === 'dead'), { what: 'the dead event' });
      const failed = seen.find((e) => e.kind === 'failed');
      // It never ran: attempt 0, no worker nor start; its added time as its 'dead' has it.
      expect(failed).toMatchObject({
        id: tree.job.id,
        retried: false,
        attempt: 0,
        addedAt: dead.addedAt,
      });
      expect(failed).not.toHaveProperty('workerId');
      expect(failed).not.toHaveProperty('startedAt');
      expect(seen.find((e) => e.kind === 'dead')).toMatchObject({
        id: tree.job.id,
        reason: 'child f-bad/bad-1 failed: card declined',
        addedAt: dead.addedAt,
      });
      await expect(parents.waitForResult(tree.job.id)).rejects.toMatchObject({ code: 'JOB_DEAD' });
    } finally {
      await events.close();
    }
  });

  it('a running sibling finishes: the dead parent counts it completed, not cancelled, and a retried parent reads its result', async () => {
    const flows = fx.producer();
    const tree = await flows.add({
      queue: 'r-parent',
      data: 'p',
      children: [
        { queue: 'r-slow', data: 1, id: 'slow-1' },
        { queue: 'r-bad', data: 2 },
      ],
    });
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let slowRan = 0;
    fx.worker('r-slow', async () => {
      slowRan++;
      await held;
      return 'late';
    });
    await waitFor(() => slowRan === 1, { what: 'the slow child to start' });
    fx.worker('r-bad', fail);
    const parents = fx.queue('r-parent');
    await waitFor(async () => (await parents.getJob(tree.job.id))?.state === 'dead', {
      what: 'the parent to die',
    });
    release();
    const slow = fx.queue('r-slow');
    await waitFor(async () => (await slow.counts()).leased === 0, { what: 'the slow one done' });
    const ran: Array<Record<string, unknown>> = [];
    fx.worker('r-parent', async (job) => void ran.push(await job.getChildrenResults()));
    await parents.clean();
    expect(ran).toEqual([]); // a dead parent does not run
    // Once its notice came, it counts as what it did (completed), no more as stopped.
    await waitFor(async () => (await parents.getJob(tree.job.id))?.children?.cancelled === 0, {
      what: 'the slow one not counted as cancelled',
    });
    expect(await parents.getJob(tree.job.id)).toMatchObject({
      state: 'dead',
      children: { pending: 0, completed: 1, failed: 1, cancelled: 0 },
    });
    // Retried from the dead-letter set, the parent reads the result of the child that finished.
    expect(await parents.retryDead(tree.job.id)).toBe(true);
    await waitFor(() => ran.length === 1, { what: 'the retried parent to run' });
    expect(ran[0]).toEqual({ 'r-slow:slow-1': 'late' });
  });

  it("propagates up by the failed parent's own policy", async () => {
    const flows = fx.producer();
    const tree = await flows.add({
      queue: 'u-top',
      data: 'top',
      children: [
        {
          queue: 'u-mid',
          data: 'fails with its child',
          id: 'mid-1',
          children: [{ queue: 'u-leaf', data: 'bad', id: 'leaf-1' }],
        },
        {
          queue: 'u-mid',
          data: 'ignored when it fails',
          id: 'mid-2',
          onFailure: 'ignore',
          children: [{ queue: 'u-leaf', data: 'bad', id: 'leaf-2' }],
        },
      ],
    });
    fx.worker('u-leaf', fail);
    const top = fx.queue('u-top');
    const info = await waitFor(
      async () => {
        const j = await top.getJob(tree.job.id);
        return j?.state === 'dead' ? j : undefined;
      },
      { what: 'the top to die' },
    );
    expect(info.deadReason).toBe(
      'child u-mid/mid-1 failed: child u-leaf/leaf-1 failed: card declined',
    );
  });

  it('ignore: recorded, the parent runs and reads the failures; remove: dropped', async () => {
    const flows = fx.producer();
    await flows.add({
      queue: 'i-parent',
      data: 'p',
      children: [
        { queue: 'i-bad', data: 1, id: 'ignored', onFailure: 'ignore' },
        { queue: 'i-bad', data: 2, id: 'removed', onFailure: 'remove' },
        { queue: 'i-good', data: 3, id: 'good' },
      ],
    });
    fx.worker('i-bad', fail);
    fx.worker('i-good', () => 'fine');
    let seen: unknown;
    fx.worker('i-parent', async (job) => {
      seen = { results: await job.getChildrenResults(), failures: await job.getChildrenFailures() };
    });
    await waitFor(() => seen, { what: 'the parent to run' });
    expect(seen).toEqual({
      results: { 'i-good:good': 'fine' },
      failures: { 'i-bad:ignored': 'card declined' },
    });
  });

  it('a cancelled child fails its parent (fail-parent); the cancel tells it at once', async () => {
    const flows = fx.producer();
    const tree = await flows.add({
      queue: 'x-parent',
      data: 'p',
      children: [
        { queue: 'x-kids', data: 1, id: 'kid' },
        { queue: 'x-kids', data: 2 },
      ],
    });
    expect(await fx.queue('x-kids').cancel('kid')).toBe(true);
    expect(await fx.queue('x-parent').getJob(tree.job.id)).toMatchObject({
      state: 'dead',
      deadReason: 'child x-kids/kid failed: cancelled',
      children: { pending: 0, completed: 0, failed: 1, cancelled: 1 },
    });
    // The other child had not started: cancelled too (by the cancel's own delivery).
    expect(await fx.queue('x-kids').getJob(tree.children![1]!.job.id)).toBeNull();
  });

  it('a child dead after its attempts (retries) fails the parent only then', async () => {
    const flows = fx.producer();
    const tree = await flows.add({
      queue: 'a-parent',
      data: 'p',
      children: [
        { queue: 'a-kid', data: 1, maxAttempts: 3, backoff: { type: 'fixed', delayMs: 0 } },
      ],
    });
    let tries = 0;
    fx.worker('a-kid', () => {
      tries++;
      throw new Error(`try ${tries}`);
    });
    const parents = fx.queue('a-parent');
    await waitFor(async () => (await parents.getJob(tree.job.id))?.state === 'dead', {
      what: 'the parent to die',
    });
    expect(tries).toBe(3);
    expect((await parents.getJob(tree.job.id))?.deadReason).toMatch(/failed: try 3$/);
  });

  it("parents a child's failure dead-lettered keep the parent queue's maxDead (its clean() trims)", async () => {
    // (The notice runs without the parent queue's options: its dead-letter set grew past
    // maxDead, with each parent's keys, when nothing else died there.)
    const parents = fx.queue('m-parent', { maxDead: 1 });
    const flows = fx.producer();
    const trees = await flows.addBulk(
      [1, 2, 3].map((i) => ({
        queue: 'm-parent',
        data: i,
        children: [{ queue: 'm-kid', data: i }],
      })),
    );
    fx.worker('m-kid', fail);
    await waitFor(async () => (await parents.counts()).dead === 3, { what: 'three dead parents' });
    await parents.clean();
    expect((await parents.listDead()).map((d) => d.id)).toEqual([trees[2]!.job.id]);
    for (const t of trees.slice(0, 2)) {
      expect(await parents.getJob(t.job.id)).toBeNull();
      expect(await fx.client.exists(parents.keys.parentKey('failures', t.job.id))).toBe(0);
    }
  });
});
