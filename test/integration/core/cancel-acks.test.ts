/**
 * The canceller's wait for an acknowledgement (lib/queue/cancel-acks.ts) while it listens: an
 * answer whose message is lost (its key set, nothing heard: a Cluster subscriber moved to another
 * node without a 'close') was seen only when the wait timed out (commandTimeoutMs). The wait now
 * reads its key once a second while listening too.
 */
import { afterAll, expect, it } from '@jest/globals';
import { CancelAcks } from '../../../lib/queue/cancel-acks.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

it('an acknowledgement whose message is lost is still seen while listening, long before the timeout', async () => {
  const q = fx.queue();
  const admin = fx.client();
  const acks = new CancelAcks(fx.client(), q.keys, 120_000);
  let resolved = false;
  const waiting = acks.wait('lost-1').then(() => (resolved = true));
  try {
    // Listening: its SUBSCRIBE is in.
    const subscribers = async () =>
      ((await admin.pubsub('NUMSUB', q.keys.cancelAckChannel)) as [string, number])[1];
    await waitFor(async () => (await subscribers()) === 1, { what: 'the canceller subscribed' });
    // The worker's answer without its message: the key alone.
    await admin.set(q.keys.cancelAck('lost-1'), '1');
    await waitFor(() => resolved, { timeoutMs: 10_000, what: 'the wait to see the key' });
  } finally {
    await acks.close();
    await waiting;
  }
  expect(resolved).toBe(true);
});
