/**
 * The notice protocol when something dies in between (docs/internals/flows.md): a notice never
 * delivered (clean delivers it), delivered twice (nothing happens twice), lost (repair), a
 * delivery lost by the parent's Redis (the second delivery), a child that ends before its parent
 * is written (kept for it), a producer that died after reserving (dropped), a write sent twice.
 */
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { resolveQueueOptions } from '../../../lib/options.js';
import { FlowRunner } from '../../../lib/queue/flows/runner.js';
import { FlowFixture } from '../../support/flows.js';
import { waitFor } from '../../support/wait.js';

const fx = new FlowFixture({ heartbeatTimeoutMs: 500 });
afterEach(() => fx.closeWorkers());
afterAll(() => fx.cleanup());

/** A two-child flow whose first child is leased and completed without delivering its notice. */
async function completedUndelivered(parentQueue: string, childQueue: string, onFailure = {}) {
  const tree = await fx.producer().add({
    queue: parentQueue,
    data: 'p',
    children: [
      { queue: childQueue, data: 1, ...onFailure },
      { queue: childQueue, data: 2 },
    ],
  });
  const kids = fx.queue(childQueue);
  const [lease] = await kids.lease({ count: 1 });
  // The Worker's call, without the delivery that follows it: as if the worker died right after.
  const r = await kids.completeAndLease([{ lease: lease!, result: { n: 1 } }]);
  expect(r.completed).toEqual([true]);
  return { tree, kids, seq: lease!.seq };
}

describe('notices across crashes', () => {
  it('a notice left in the outbox is delivered by clean() (after the grace), once', async () => {
    const { tree, kids } = await completedUndelivered('u-parent', 'u-kids');
    const parents = fx.queue('u-parent');
    expect((await parents.getJob(tree.job.id))?.children?.pending).toBe(2);
    const report = await waitFor(async () => (await kids.clean()).flows, {
      what: 'clean to deliver the notice',
      timeoutMs: 10_000,
    });
    expect(report.notices).toBe(1);
    expect((await parents.getJob(tree.job.id))?.children).toMatchObject({
      pending: 1,
      completed: 1,
    });
    // Delivered again (its second delivery, or a crash before the ack): nothing happens twice.
    expect((await kids.repair()).fixes).toEqual([]);
    expect((await parents.getJob(tree.job.id))?.children).toMatchObject({
      pending: 1,
      completed: 1,
    });
  });

  it('a notice lost (deleted by hand) is found by repair: the child counts as failed', async () => {
    // Not kept: the child is gone with its notice (a kept one is below).
    fx.queue('l-kids', { keepCompleted: false });
    const { tree, kids, seq } = await completedUndelivered('l-parent', 'l-kids');
    await fx.client.hdel(kids.keys.key('flowOutbox'), seq);
    await fx.client.zrem(kids.keys.key('flowOutboxAt'), seq);
    const parents = fx.queue('l-parent');
    const report = await parents.repair();
    expect(report.fixes).toEqual([
      `${tree.job.id}: child l-kids:${seq} ended without its notice reaching the parent (found by repair): counted as failed`,
    ]);
    expect(await parents.getJob(tree.job.id)).toMatchObject({
      state: 'dead',
      deadReason: `child l-kids/${seq} failed: ended without its notice reaching the parent (found by repair)`,
    });
    expect((await parents.repair()).fixes).toEqual([]);
  });

  it('one repair() finds every parent whose notice was lost, past its first 1 000 fixes', async () => {
    // (It paged the waiting parents by rank while the fixed ones left the set: one call fixed
    // 1 000 of 1 500, skipping the 500 after them.)
    const kids = fx.queue('m-kids', { keepCompleted: false });
    const n = 1_500;
    await fx.producer().addBulk(
      Array.from({ length: n }, (_, i) => ({
        queue: 'm-parent',
        data: i,
        children: [{ queue: 'm-kids', data: i }],
      })),
    );
    const leased = await kids.lease({ count: n });
    const r = await kids.completeAndLease(leased.map((lease) => ({ lease })));
    expect(r.completed.filter(Boolean)).toHaveLength(n);
    await fx.client.del(kids.keys.key('flowOutbox'), kids.keys.key('flowOutboxAt'));
    const parents = fx.queue('m-parent');
    expect((await parents.counts()).waitingChildren).toBe(n);
    expect((await parents.repair()).fixes).toHaveLength(n);
    expect(await parents.counts()).toMatchObject({ waitingChildren: 0, dead: n });
    expect((await parents.repair()).fixes).toEqual([]);
  });

  it('a lost notice of a kept completed child (keepCompleted) is written again by repair: it completed', async () => {
    const { tree, kids, seq } = await completedUndelivered('k-parent', 'k-kids');
    expect(await kids.getJob(seq)).toMatchObject({ state: 'completed', result: { n: 1 } });
    await fx.client.hdel(kids.keys.key('flowOutbox'), seq);
    await fx.client.zrem(kids.keys.key('flowOutboxAt'), seq);
    const parents = fx.queue('k-parent');
    // The child ended (kept, not pending): its notice goes out again, with its kept result, and
    // repair delivers it (it waited for a clean() of the child's queue).
    expect((await parents.repair()).fixes).toEqual([]);
    expect((await parents.getJob(tree.job.id))?.children).toMatchObject({
      pending: 1,
      completed: 1,
    });
    expect(await parents.getChildrenResults(tree.job.id)).toEqual({ [`k-kids:${seq}`]: { n: 1 } });
    expect(await kids.getJob(seq)).toMatchObject({ state: 'completed' });
  });

  it("a delivery the parent's Redis lost (failover) is made again by the second delivery", async () => {
    const { tree, kids, seq } = await completedUndelivered('f-parent', 'f-kids');
    const parents = fx.queue('f-parent');
    await kids.deliverFlowNotices([seq]);
    const awaited = parents.keys.parentKey('awaited', tree.job.id);
    const results = parents.keys.parentKey('results', tree.job.id);
    expect(await fx.client.hlen(awaited)).toBe(1);
    // The parent's Redis loses what the delivery did, as a failover to a replica that had not
    // received it would (the child's queue kept the acknowledgement).
    await fx.client.hset(awaited, `f-kids:${seq}`, `f${seq}`);
    await fx.client.hdel(results, `f-kids:${seq}`);
    const report = await waitFor(
      async () => {
        const r = (await kids.clean()).flows;
        return r && r.notices > 0 ? r : undefined;
      },
      { what: 'the second delivery', timeoutMs: 15_000 },
    );
    expect(report.notices).toBe(1);
    expect(await fx.client.hgetall(results)).toEqual({ [`f-kids:${seq}`]: '{"n":1}' });
    expect(await fx.client.hlen(awaited)).toBe(1);
    // Then the notice is gone.
    expect(await fx.client.hexists(kids.keys.key('flowOutbox'), seq)).toBe(0);
  });

  describe('written level by level (as on a Cluster)', () => {
    const runner = () =>
      new FlowRunner(fx.client, resolveQueueOptions('flows', { prefix: fx.prefix, logger: false }));

    it('a child that ends before its parent is written: its notice waits for the parent', async () => {
      const r = runner();
      // Reserve one seq in each queue (flow_reserve), write the child's level only.
      const reserve = async (q: string) =>
        String(((await r.runOn([q], 'flow_reserve', [1, '', 0, 0, 0, 1, 1])) as string[])[1]);
      const pRes = await reserve('e-parent');
      const cRes = await reserve('e-kids');
      const pSeq = pRes.split(':')[0]!;
      const cSeq = cRes.split(':')[0]!;
      const child = [cSeq, '', '"c"', JSON.stringify({ P: `e-parent\t${pSeq}\t` }), 5, '', 0];
      expect(await r.runOn(['e-kids'], 'flow_add', [1, 1, cRes, 1, ...child])).toEqual([1, 0, 0]);
      // Sent again after a lost reply: written before, nothing twice.
      expect(await r.runOn(['e-kids'], 'flow_add', [1, 1, cRes, 1, ...child])).toEqual([2]);
      const kids = fx.queue('e-kids');
      expect((await kids.counts()).pending).toBe(1);
      const [lease] = await kids.lease();
      expect(lease?.parent).toEqual({ queue: 'e-parent', id: pSeq });
      expect(await kids.complete(lease!, 'early')).toBe(true);
      // The parent is written now: it applies the notice that came first, and is pending.
      const parent = [
        pSeq,
        '',
        '"p"',
        JSON.stringify({ W: 0 }),
        5,
        '',
        1,
        `e-kids:${cSeq}`,
        `f${cSeq}`,
      ];
      await r.runOn(['e-parent'], 'flow_add', [1, 1, pRes, 1, ...parent]);
      const parents = fx.queue('e-parent');
      expect(await parents.getJob(pSeq)).toMatchObject({
        state: 'pending',
        children: { pending: 0, completed: 1 },
      });
      expect(await parents.getChildrenResults(pSeq)).toEqual({ [`e-kids:${cSeq}`]: 'early' });
    });

    it('a reservation its producer never wrote is dropped after the orphan age', async () => {
      const r = runner();
      const q = fx.queue('o-parent');
      const range = String(
        ((await r.runOn(['o-parent'], 'flow_reserve', [1, '', 0, 0, 0, 1, 3])) as string[])[1],
      );
      expect((await q.clean()).flows).toBeUndefined();
      // Ten minutes later (its time written back instead of waiting).
      const key = q.keys.key('flowReserved');
      const [member] = await fx.client.zrange(key, '0', '0');
      expect(member?.startsWith(`${range}:`)).toBe(true);
      await fx.client.zrem(key, member!);
      await fx.client.zadd(key, range.split(':')[0]!, `${range}:1`);
      expect((await q.clean()).flows).toEqual({ notices: 0, cancelled: 0, reservationsDropped: 1 });
      expect(await fx.client.zcard(q.keys.key('flowReserved'))).toBe(0);
    });

    it("a root's claim (a Cluster's add) refuses another add until written, released or lapsed", async () => {
      const r = runner();
      const q = fx.queue('k-root');
      const claims = q.keys.key('flowClaims');
      const reserved = q.keys.key('flowReserved');
      const MIN = 60_000;
      // Add A reserves a child level and the root's level in this queue (the root's last), and
      // claims the root's id: the claim names the root's level. B (another token) is refused, A's
      // own call sent again is not.
      const reserve = async (token: string, cid = 'order-1', claimMs = MIN) =>
        (await r.runOn(['k-root'], 'flow_reserve', [
          1,
          token,
          claimMs,
          1,
          cid,
          1,
          cid,
          2,
          3,
          1,
        ])) as Array<string | number>;
      const first = (await reserve('A')) as string[];
      expect(first[0]).toBe(1);
      expect(await fx.client.hget(claims, 'order-1')).toMatch(new RegExp(`^A\t${first[2]}\t\\d+$`));
      expect(await reserve('B')).toEqual([0, 1, 'order-1', 'c']);
      const again = (await reserve('A')) as string[];
      expect(again[0]).toBe(1);
      // A fails and releases: B reserves at once.
      expect(
        await r.run('k-root', 'flow_release', [
          'A',
          1,
          'order-1',
          ...first.slice(1),
          ...again.slice(1),
        ]),
      ).toBe(1);
      expect(await fx.client.zcard(reserved)).toBe(0);
      const b = (await reserve('B')) as string[];
      expect(b[0]).toBe(1);
      // B writes its root: the claim ends with it, the id is taken.
      const root = [b[2]!.split(':')[0]!, 'order-1', '"r"', '', 5, '', 0];
      const wrote = (await r.runOn(['k-root'], 'flow_add', [1, 1, b[2]!, 1, ...root])) as number[];
      expect(wrote[0]).toBe(1);
      expect(await fx.client.exists(claims)).toBe(0);
      expect(await reserve('C')).toEqual([0, 1, 'order-1', 't']);
      // A claim whose root level's reservation is gone holds nothing, nor one past claim_ms.
      const d = (await reserve('D', 'order-2')) as string[];
      await fx.client.zrem(
        reserved,
        (await fx.client.zrangebyscore(reserved, d[2]!.split(':')[0]!, d[2]!.split(':')[0]!))[0]!,
      );
      expect((await reserve('E', 'order-2'))[0]).toBe(1);
      expect(await reserve('F', 'order-2', MIN)).toEqual([0, 1, 'order-2', 'c']);
      expect((await reserve('F', 'order-2', -1))[0]).toBe(1); // (past its claim_ms)
      // A producer that died after claiming: clean() drops its reservations (orphan age) and the
      // claims naming them.
      const all = await fx.client.zrange(reserved, '0', '-1');
      await fx.client.del(reserved);
      for (const m of all) {
        const [first1, last] = m.split(':');
        await fx.client.zadd(reserved, Number(first1), `${first1}:${last}:1`);
      }
      expect((await q.clean()).flows).toMatchObject({ reservationsDropped: all.length });
      expect(await fx.client.exists(claims)).toBe(0);
    });
  });
});
