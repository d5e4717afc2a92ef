/**
 * A flow that cannot be added is refused before anything is written, every problem listed with
 * its path in the tree.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { FlowProducer, type FlowNode, type WorkQueueError } from '../../../lib/index.js';
import { FlowFixture } from '../../support/flows.js';
import { keysMatching } from '../../support/keys.js';

const fx = new FlowFixture();
afterAll(() => fx.cleanup());

async function refused(p: Promise<unknown>): Promise<WorkQueueError> {
  const e = (await p.then(
    () => undefined,
    (err: unknown) => err,
  )) as WorkQueueError | undefined;
  expect(e).toBeDefined();
  expect(await keysMatching(fx.client, `${fx.prefix}:*`)).toEqual([]);
  return e!;
}

describe('a bad flow is refused, every problem listed with its path, nothing written', () => {
  it('cycle, duplicate id, bad queue names, bad options, unknown fields', async () => {
    const flows = fx.producer();
    const loop: FlowNode = { queue: 'q', data: 1, children: [] };
    (loop.children as FlowNode[]).push({ queue: 'q', data: 2, children: [loop] });
    const tree = {
      queue: 'orders',
      data: 1,
      onFailure: 'ignore',
      children: [
        { queue: 'a b', data: 1 },
        { queue: 'ok', data: 2, id: 'same' },
        { queue: 'ok', data: 3, children: [{ queue: 'ok', data: 4, id: 'same' }] },
        { queue: 'ok', data: 5, priority: 12, onFailure: 'explode', delayMs: -1, backoff: 3 },
        { queue: 'ok', data: 6, queueName: 'x', opts: { attempts: 3 } },
        loop,
        { queue: 'ok', data: undefined },
        'not a node',
        { queue: 'ok', data: 7, children: 'nope' },
        { queue: 'ok', data: 8, name: 'n\uDBFF' },
      ],
    } as unknown as FlowNode;
    const e = await refused(flows.add(tree));
    // A payload that cannot be stored names the error (as for add); every problem is listed.
    expect(e.code).toBe('ENCODE_FAILED');
    expect(e.problems).toEqual([
      'onFailure: only a child has one (what its failure does to its parent)',
      expect.stringMatching(/^children\[0\]\.queue: must be 1-100 characters/),
      'children[2].children[0].id: "same" is also at children[1] in queue "ok"',
      'children[3].priority: must be an integer 0 (highest)..9 (lowest)',
      'children[3].backoff: must be an object { type, delayMs, maxDelayMs? }',
      expect.stringMatching(
        /^children\[3\]\.delayMs: must be an integer 0\.\.90000000000000 \(ms\), got /,
      ),
      "children[3].onFailure: must be 'fail-parent', 'ignore' or 'remove'",
      expect.stringMatching(
        /^children\[4\]\.queueName: unknown field \(BullMQ's queueName is `queue` here\)/,
      ),
      expect.stringMatching(/^children\[4\]\.opts: unknown field \(options go on the node itself/),
      'children[5].children[0].children[0]: a cycle: this node is its own ancestor',
      'children[6].data: data is undefined (use null for "no data")',
      'children[7]: must be an object { queue, data, children?, … }',
      'children[8].children: must be an array of nodes',
      'children[9].name "n\\udbff" has a lone UTF-16 surrogate: it cannot be stored as UTF-8',
    ]);
  });

  it('a node over the payload limit: PAYLOAD_TOO_LARGE, with its path', async () => {
    const flows = fx.producer({ maxPayloadBytes: 100 });
    const e = await refused(
      flows.add({ queue: 'p', data: 1, children: [{ queue: 'c', data: 'x'.repeat(200) }] }),
    );
    expect(e.code).toBe('PAYLOAD_TOO_LARGE');
    expect(e.problems).toEqual([
      'children[0].data: payload is 202 bytes, over maxPayloadBytes 100',
    ]);
  });

  it('more than 10 000 nodes', async () => {
    const flows = fx.producer();
    const children = Array.from({ length: 10_000 }, () => ({ queue: 'c', data: 0 }));
    const e = await refused(flows.add({ queue: 'p', data: 0, children }));
    expect(e.problems).toEqual(['more than 10000 nodes: the most one add or addBulk writes']);
  });

  it('an unknown queue (the queues option); addBulk paths start with the flow', async () => {
    const flows = fx.producer({ queues: ['orders', 'payments'] });
    const e = await refused(
      flows.addBulk([
        { queue: 'orders', data: 1, children: [{ queue: 'payments', data: 1 }] },
        { queue: 'orders', data: 1, children: [{ queue: 'paymnets', data: 1 }] },
      ]),
    );
    expect(e.problems).toEqual(['[1].children[0].queue: unknown queue "paymnets"']);
    await expect(flows.addBulk('x' as never)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('a caller id that exists in its queue refuses the flow (every taken id listed)', async () => {
    const q = fx.queue('t-kids');
    await q.add('already', { id: 'taken-1' });
    await q.add('already', { id: 'taken-2' });
    const before = await keysMatching(fx.client, `${fx.prefix}:*`);
    const flows = fx.producer();
    const e = (await flows
      .add({
        queue: 't-parent',
        data: 1,
        children: [
          { queue: 't-kids', data: 1, id: 'taken-1' },
          { queue: 't-kids', data: 2, id: 'free' },
          { queue: 't-kids', data: 3, children: [{ queue: 't-kids', data: 4, id: 'taken-2' }] },
        ],
      })
      .catch((err: unknown) => err)) as WorkQueueError;
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.problems).toEqual([
      'children[0].id: job "taken-1" already exists in queue "t-kids" (or completed within its dedupe window)',
      'children[2].children[0].id: job "taken-2" already exists in queue "t-kids" (or completed within its dedupe window)',
    ]);
    expect(await keysMatching(fx.client, `${fx.prefix}:*`)).toEqual(before);
    expect(await q.getJob('free')).toBeNull();
    await q.obliterate();
    await fx.client.del(q.keys.key('seqCounter')); // (obliterate keeps it: the next test sees none)
  });

  it('onFailure names Object.prototype has (constructor, __proto__) are refused', async () => {
    const flows = fx.producer();
    const kids = ['constructor', 'toString', '__proto__'].map((onFailure, i) => ({
      queue: 'ok',
      data: i,
      onFailure,
    }));
    const e = await refused(flows.add({ queue: 'p', data: 0, children: kids } as FlowNode));
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.problems).toEqual(
      [0, 1, 2].map((i) => `children[${i}].onFailure: must be 'fail-parent', 'ignore' or 'remove'`),
    );
  });

  it("addBatch names its problems as the caller wrote them; a whole batch's size is no node's", async () => {
    // (Size problems were prefixed 'onComplete.' as if the callback had them.)
    const flows = fx.producer();
    const many = Array.from({ length: 10_001 }, (_, i) => ({ queue: 'bt', data: i }));
    const e = await refused(flows.addBatch(many, { onComplete: { queue: 'bd', data: 'r' } }));
    expect(e.problems).toEqual(['more than 10000 nodes: the most one add or addBulk writes']);
    const bad = await refused(
      flows.addBatch([{ queue: 'bt', data: 1, priority: 12 }], {
        onComplete: { queue: 'bd', data: undefined },
      }),
    );
    expect(bad.problems).toEqual([
      'onComplete.data: data is undefined (use null for "no data")',
      'jobs[0].priority: must be an integer 0 (highest)..9 (lowest)',
    ]);
  });

  it('addBatch: a job not an object, a job with children, an unknown option', async () => {
    // (A null job was spread into { onFailure } and refused for its data: ENCODE_FAILED; a job's
    // children and a mistyped option were taken.)
    const flows = fx.producer();
    const jobs = [null, { queue: 'bt', data: 1, children: [{ queue: 'bt', data: 2 }] }, 5];
    const e = await refused(
      flows.addBatch(
        jobs as never,
        {
          onComplete: { queue: 'bd', data: 'r' },
          onFailure: 'ignore',
        } as never,
      ),
    );
    expect(e.code).toBe('INVALID_ARGUMENT');
    expect(e.problems).toEqual([
      'jobs[0]: must be an object { queue, data, … }, got null',
      "jobs[1].children: a batch's jobs have none; for a tree of jobs add a flow with add(), whose root runs once its children ended",
      'jobs[2]: must be an object { queue, data, … }, got 5',
      'unknown option "onFailure"; known: onComplete',
    ]);
  });

  it('getBatch of an id that is not a string: INVALID_ARGUMENT', async () => {
    const flows = fx.producer();
    for (const id of [123, null, undefined, {}]) {
      await expect(flows.getBatch(id as never)).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      });
    }
  });

  it('bad producer options are refused at construction', () => {
    expect(
      () => new FlowProducer(fx.client, { prefix: 'a b', queues: ['ok', ''], nope: 1 } as never),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        problems: [
          'unknown option "nope"; known: prefix, codec, maxPayloadBytes, commandTimeoutMs, events, replicaAcks, replicaAckTimeoutMs, queues, logger',
          expect.stringMatching(/^prefix must be 1-100 characters/),
          expect.stringMatching(/^queues\[1\] must be 1-100 characters/),
        ],
      }),
    );
  });
});
