/**
 * How a flow names its jobs to each other: a child's `parent` is its parent's id whatever it
 * holds (a tab too), and a parent's children results and failures are keyed `<queue>:<id>` — a
 * flow where two children of one parent would have one key (one result lost) is refused.
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import type { WorkQueueError } from '../../../lib/index.js';
import { FlowFixture } from '../../support/flows.js';
import { keysMatching } from '../../support/keys.js';
import { waitFor } from '../../support/wait.js';

const fx = new FlowFixture();
afterEach(() => fx.closeWorkers());
afterAll(() => fx.cleanup());

/** The error `add` (called now) is refused with, nothing written. */
async function refused(add: () => Promise<unknown>): Promise<WorkQueueError> {
  const before = await keysMatching(fx.client, `${fx.prefix}:*`);
  const e = (await add().then(
    () => undefined,
    (err: unknown) => err,
  )) as WorkQueueError | undefined;
  expect(e).toBeDefined();
  expect(await keysMatching(fx.client, `${fx.prefix}:*`)).toEqual(before);
  return e!;
}

describe("a child's parent", () => {
  it('is its parent id whole when that id holds tabs', async () => {
    const flows = fx.producer();
    // (Stored as '<queue>\t<seq>\t<id>': the id was cut at its first tab.)
    const parentId = 'order\t17\tb';
    await flows.add({
      queue: 't-parent',
      data: 0,
      id: parentId,
      children: [{ queue: 't-kids', data: 1, id: 'kid' }],
    });
    const kids = fx.queue('t-kids');
    expect((await kids.getJob('kid'))?.parent).toEqual({ queue: 't-parent', id: parentId });
    const seen: unknown[] = [];
    fx.worker('t-kids', (job) => void seen.push(job.parent));
    await waitFor(() => seen.length === 1, { what: 'the child to run' });
    expect(seen).toEqual([{ queue: 't-parent', id: parentId }]);
  });
});

describe('children of one parent with one key in its children results', () => {
  it('are refused, naming both, with every other problem', async () => {
    const flows = fx.producer();
    const e = await refused(() =>
      flows.add({
        queue: 'p',
        data: 0,
        children: [
          { queue: 'x', data: 1, id: 'y:z' },
          { queue: 'x:y', data: 2, id: 'z', priority: 12 },
          // Its id will be a number of queue x:y's counter: "x:y:17" may be it.
          { queue: 'x:y', data: 3 },
          { queue: 'x', data: 4, id: 'y:17' },
          // (A duplicate id, listed once as that.)
          { queue: 'x', data: 5, id: 'y:z' },
        ],
      }),
    );
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.problems).toEqual([
      'children[1].priority: must be an integer 0 (highest)..9 (lowest)',
      // (The nodes' own problems first, in tree order.)
      'children[4].id: "y:z" is also at children[0] in queue "x"',
      `children[1].id: its key in its parent's children results and failures (<queue>:<id>), "x:y:z", is also that of children[0] (queue "x", id "y:z"): give one of them another id`,
      `children[2]: without an id its key in its parent's children results and failures is "x:y:<its number>", which could be "x:y:17", the key of children[3] (queue "x", id "y:17"): give it an id`,
    ]);
  });

  it('in a batch are named as its jobs', async () => {
    const flows = fx.producer();
    const e = await refused(() =>
      flows.addBatch(
        [
          { queue: 'x', data: 1, id: 'y:z' },
          { queue: 'x:y', data: 2, id: 'z' },
        ],
        { onComplete: { queue: 'p', data: 0 } },
      ),
    );
    expect(e.problems).toEqual([
      `jobs[1].id: its key in its parent's children results and failures (<queue>:<id>), "x:y:z", is also that of jobs[0] (queue "x", id "y:z"): give one of them another id`,
    ]);
  });

  it('keys that differ, or alike under different parents, are added; each result kept', async () => {
    const flows = fx.producer();
    const added = await flows.add({
      queue: 'k-p',
      data: 0,
      children: [
        { queue: 'k-x', data: 'a', id: 'k-y:z' },
        { queue: 'k-x:k-y', data: 'b', id: 'w' },
        // ("k-x:k-y:<number>" is never "k-x:k-y:z".)
        { queue: 'k-x:k-y', data: 'c' },
        { queue: 'k-q', data: 'd', children: [{ queue: 'k-x:k-y', data: 'e', id: 'z' }] },
      ],
    });
    const kids = ['k-x', 'k-x:k-y', 'k-q'];
    for (const q of kids) fx.worker(q, (job) => job.data);
    const results = fx.queue('k-p').waitForResult(added.job.id, { timeoutMs: 10_000 });
    fx.worker('k-p', (job) => job.getChildrenResults());
    const counter = added.children![2]!.job.id;
    expect(await results).toEqual({
      'k-x:k-y:z': 'a',
      'k-x:k-y:w': 'b',
      [`k-x:k-y:${counter}`]: 'c',
      [`k-q:${added.children![3]!.job.id}`]: 'd',
    });
  });
});
