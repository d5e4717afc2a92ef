/**
 * A heartbeat that lands after its worker left. close() waits a bounded time (2 s) for its
 * heartbeat thread to stop beating, then leaves; a beat the thread sent before, held meanwhile
 * (Redis stalled, the thread's connection reconnecting), can reach Redis after the leave. It
 * must not list the worker again: before the leave noted the worker as left (the heartbeat
 * record's 'l', lib/scripts/lib/reclaim.lua), such a beat made it a live worker with no details
 * (counts().workers 1, getWorkers() a pid-0 entry) until a clean found it silent. A worker
 * reclaimed as dead, not left, still comes back with its next beat (it was only frozen).
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Worker, type WorkQueue } from '../../../lib/index.js';
import { scriptKeys, scriptShape } from '../../../lib/scripts/assemble.js';
import { callScript, defineScripts } from '../../../lib/scripts/define.js';
import { QueueFixture } from '../../support/queue.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/** One beat of worker `workerId`, as its heartbeat thread sends it. */
function beat(q: WorkQueue<string>, workerId: string): Promise<unknown> {
  const keys = scriptKeys(scriptShape('heartbeat'), q.keys, { workerId });
  return callScript(defineScripts(q.client), 'heartbeat', keys, [workerId, 30_000]);
}

describe('a beat landing after its worker left', () => {
  it('does not list the worker again', async () => {
    const q = fx.queue<string>();
    const w = new Worker(q, () => 'ok');
    await w.start();
    const id = w.workerId;
    expect(await q.counts()).toMatchObject({ workers: 1 });
    await w.close();
    expect(await q.counts()).toMatchObject({ workers: 0 });

    expect(await beat(q, id)).toBe(0);
    expect(await q.counts()).toMatchObject({ workers: 0 });
    expect(await q.getWorkers()).toEqual([]);
    // Nothing for a clean to find either.
    expect(await q.clean()).toMatchObject({ deadWorkers: 0 });
  });

  it('a live worker beside it, and workers that left before it, keep their own state', async () => {
    const q = fx.queue<string>();
    const live = new Worker(q, () => 'ok');
    const gone = [new Worker(q, () => 'ok'), new Worker(q, () => 'ok')];
    await Promise.all([live, ...gone].map((w) => w.start()));
    const goneIds = gone.map((w) => w.workerId);
    await Promise.all(gone.map((w) => w.close()));
    for (const id of goneIds) expect(await beat(q, id)).toBe(0);
    expect(await beat(q, live.workerId)).toBe(1);
    expect((await q.getWorkers()).map((x) => x.id)).toEqual([live.workerId]);
    await live.close();
    expect(await q.counts()).toMatchObject({ workers: 0 });
  });

  it('remembers at most the last 1 000 workers that left, and not another worker id', async () => {
    const q = fx.queue<string>();
    // 1 005 leaves of made-up ids (the leave a worker's close() sends, pipelined), then the first few
    // are forgotten: their late beats list them (a clean would drop them as silent).
    const ids = Array.from({ length: 1_005 }, (_, i) => `9${i}`);
    // (The queue's own worker protocol: what Worker.close() calls.)
    const protocol = (q as unknown as { workers: { leave(id: string): Promise<void> } }).workers;
    await Promise.all(ids.map((id) => protocol.leave(id)));
    const record = await q.client.hget(q.keys.key('heartbeatRecord'), 'l');
    expect(record?.split(',').filter(Boolean)).toHaveLength(1_000);
    expect(await beat(q, ids[1_004]!)).toBe(0);
    expect(await beat(q, ids[5]!)).toBe(0);
    expect(await beat(q, ids[4]!)).toBe(1); // the oldest five are forgotten
    // "9" never left: not taken for "90", "91", ... which did.
    expect(await beat(q, '9')).toBe(1);
    expect(await q.counts()).toMatchObject({ workers: 2 });
  });
});
