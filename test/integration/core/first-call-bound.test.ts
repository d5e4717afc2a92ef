/**
 * One `commandTimeoutMs` bounds an operation whole, also the first of a queue object (its
 * start-up check — INFO, then the limits its options write — runs first), and `Worker.start()`
 * rejects once a step timed out, without waiting for its connections to close (a QUIT that
 * Redis does not answer waits 1 s). Through a proxy that delays or holds Redis' replies.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { FlowProducer, Worker, WorkQueue, WorkQueueError } from '../../../lib/index.js';
import { errorOf } from '../../support/core.js';
import { uniqueName } from '../../support/keys.js';
import { redisProxy } from '../../support/redis-proxy.js';

/** Every reply `delayMs` late (in order); none at all while `holding`. */
const rules = { delayMs: 0, holding: false };
let proxy: Awaited<ReturnType<typeof redisProxy>>;
const clients: Redis[] = [];
/** A client connected (its ready check answered) before the replies slow down. */
const client = async (): Promise<Redis> => {
  const c = new Redis(proxy.url, { maxRetriesPerRequest: null });
  c.on('error', () => undefined);
  clients.push(c);
  await c.ping();
  return c;
};

beforeAll(async () => {
  proxy = await redisProxy(() => ({
    reply(chunk, c) {
      if (rules.holding) return;
      if (rules.delayMs === 0) c.toClient(chunk);
      else setTimeout(() => c.toClient(chunk), rules.delayMs);
    },
  }));
});
afterEach(() => {
  rules.delayMs = 0;
  rules.holding = false;
  for (const c of clients.splice(0)) c.disconnect();
});
afterAll(() => proxy.close());

describe('the first operation of a queue object', () => {
  it('the start-up check and the add share one commandTimeoutMs: slow steps that each fit it, together past it, reject REDIS_UNAVAILABLE', async () => {
    // Four steps of 200 ms (INFO, the limiter's write, the groups' two), then the add: 1 s in
    // all against a bound of 500 ms, though each step answers within it.
    const c1 = await client();
    const c2 = await client();
    rules.delayMs = 200;
    const q = new WorkQueue<number>(c1, uniqueName(), {
      logger: false,
      commandTimeoutMs: 500,
      limiter: { max: 1000, durationMs: 1000 },
      groups: { concurrency: 2 },
    });
    const e = await errorOf(q.add(1));
    expect(e).toBeInstanceOf(WorkQueueError);
    expect(e).toMatchObject({ code: 'REDIS_UNAVAILABLE' });
    expect((e as Error).message).toMatch(/^queue .+: add: no reply from Redis within 500 ms/);
    // (Its check unanswered in time: the add itself was not sent, a retry adds it once.)
    expect((e as Error).message).toContain('in its start-up check: nothing of the operation sent');
    // ready() alone is bounded as well (three of its steps: 600 ms).
    const q2 = new WorkQueue<number>(c2, uniqueName(), {
      logger: false,
      commandTimeoutMs: 500,
      limiter: { max: 1000, durationMs: 1000 },
      groups: { concurrency: 2 },
    });
    expect(await errorOf(q2.ready())).toMatchObject({ code: 'REDIS_UNAVAILABLE' });
    // The check went on: once it is done, an add (one step of 200 ms) is within the bound.
    rules.delayMs = 0;
    await q.ready();
    await q2.ready();
    rules.delayMs = 200;
    expect(await q.add(2)).toMatchObject({ added: true });
    expect(await q2.add(2)).toMatchObject({ added: true });
  });

  it('an operation the check left too little time is not sent (a late reply would reject an add that ran)', async () => {
    const c = await client();
    rules.delayMs = 400; // the check 400 ms of 500: 100 ms left, under a quarter
    const q = new WorkQueue<number>(c, uniqueName(), { logger: false, commandTimeoutMs: 500 });
    const e = await errorOf(q.add(1));
    expect(e).toMatchObject({ code: 'REDIS_UNAVAILABLE' });
    expect((e as Error).message).toContain('(nothing sent)');
    rules.delayMs = 0;
    expect((await q.counts()).pending).toBe(0);
    expect(await q.add(2)).toMatchObject({ id: '1', added: true });
  });

  it("a flow add's first call (after the producer's check) is bounded the same way", async () => {
    const name = uniqueName();
    const tree = { queue: name, data: 1, children: [{ queue: name, data: 2 }] };
    // Its scripts loaded first (as after any earlier flow): then each call is one round trip.
    await new FlowProducer(await client(), { logger: false }).add(tree);
    const c = await client();
    rules.delayMs = 300; // the check 300 ms, its first call 300 more: each within 500, not both
    const flows = new FlowProducer(c, { logger: false, commandTimeoutMs: 500 });
    expect(await errorOf(flows.add(tree))).toMatchObject({ code: 'REDIS_UNAVAILABLE' });
  });
});

describe('Worker.start() against a Redis that stops answering', () => {
  it('rejects once its check timed out, not after its connections closed (their QUIT unanswered)', async () => {
    const q = new WorkQueue<number>(await client(), uniqueName(), {
      logger: false,
      commandTimeoutMs: 150,
    });
    rules.holding = true;
    const w = new Worker(q, () => undefined, { autostart: false });
    const t = performance.now();
    const e = await errorOf(w.start());
    const took = performance.now() - t;
    expect(e).toMatchObject({ code: 'REDIS_UNAVAILABLE' });
    // The bound is 2 × 150 ms (two steps); the release alone waited 1 s for the QUIT before.
    expect(took).toBeLessThan(900);
    // close() waits for that release, and resolves.
    await w.close();
  });
});
