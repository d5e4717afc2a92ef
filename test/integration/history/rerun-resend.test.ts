/**
 * rerun(id) whose reply is lost (the connection dropped after Redis ran it; ioredis sends it
 * again after the reconnect): the re-send answers the job the first run made and adds nothing
 * (it made a second job; with a caller id it rejected BAD_STATE, the first one's job holding it).
 */
import { afterAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { WorkQueue } from '../../../lib/index.js';
import { deleteKeys } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { replyDroppingProxy } from '../../support/reply-dropping-proxy.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

it.each([
  ['without a caller id', undefined],
  ['with a caller id', 'report-7'],
])('%s: one new job, its id answered', async (_how, callerId) => {
  const check = fx.queue<string>();
  const { id } = await check.add('x', callerId ? { id: callerId } : {});
  const [lease] = await check.lease({ count: 1 });
  expect(await check.complete(lease!)).toBe(true);
  // The rerun's command (its action 'rerun') is the one whose reply is dropped.
  const proxy = await replyDroppingProxy('rerun');
  const client = new Redis(proxy.url); // default options: re-sends unanswered commands
  client.on('error', () => undefined);
  try {
    const q = new WorkQueue<string>(client, check.name, {
      logger: false,
      prefix: check.options.prefix,
    });
    // (The script in Redis' cache first: the reply dropped is the run's, not a NOSCRIPT.)
    expect(await q.rerun('no-such-job')).toBeNull();
    proxy.arm();
    const again = await q.rerun(id);
    expect(proxy.dropped).toBe(1);
    expect(again).toBe(callerId ?? String(Number(id) + 1));
    const pending = await check.getJobs('pending');
    expect(pending.map((j) => j.id)).toEqual([again]);
    expect(await check.getJob(id)).toMatchObject({ state: callerId ? 'pending' : 'completed' });
  } finally {
    client.disconnect();
    await proxy.close();
    await deleteKeys(fx.client(), `${check.options.prefix}:*`);
  }
});
