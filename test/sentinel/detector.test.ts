/**
 * The ioredis failover-detector race, made to happen: a queue's Sentinel client lost its
 * connection and is asking a sentinel for the master (held up: that sentinel is stopped) when a
 * failover is announced. ioredis 6.0.0's old detector then aborts the reconnect and the client
 * ends for good — a worker that silently stops. The queue's guard (lib/redis/connection.ts) keeps
 * it reconnecting, to the new master.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { SENTINEL_CLIENT_OPTIONS, WorkQueue } from '../../lib/index.js';
import { uniqueName } from '../support/keys.js';
import { startRedisSentinel, type RedisSentinelHandle } from '../support/redis-sentinel.js';
import { waitFor } from '../support/wait.js';

let setup: RedisSentinelHandle;
beforeAll(async () => {
  setup = await startRedisSentinel();
}, 60_000);
afterAll(() => setup?.dispose());

it('a failover announced while a client asks a sentinel for the master does not end the client', async () => {
  const [asked, other] = setup.sentinels.map((s) => s.port) as [number, number];
  const client = new Redis({
    ...SENTINEL_CLIENT_OPTIONS,
    sentinels: setup.sentinels,
    name: setup.name,
    lazyConnect: true,
  });
  client.on('error', () => undefined);
  const subscribed = new Promise((resolve) => client.once('failoverSubscribed', resolve));
  const heard: number[] = [];
  const stopListening = await setup.onSwitch(() => heard.push(Date.now()));
  try {
    const q = new WorkQueue(client, uniqueName('detector'), { logger: false });
    await q.add('before');
    await subscribed; // the detector of this connection listens to every sentinel
    const old = await setup.master();
    const id = await client.client('ID');

    // The connection drops; the client asks the first sentinel again, which does not answer.
    setup.pause(asked);
    await setup.command(old, 'CLIENT', 'KILL', 'ID', id);
    await waitFor(() => client.status === 'connecting', { what: 'the client reconnecting' });
    // The other sentinels fail over meanwhile, and announce it.
    await setup.failover(other);
    await waitFor(() => heard.length > 0, { timeoutMs: 10_000, what: '+switch-master' });
    const fresh = await setup.master();
    expect(fresh).not.toBe(old);
    setup.resume(asked);

    // The client lives on and ends up on the new master (via the old one while the resumed
    // sentinel still names it, until it learns of the switch).
    await waitFor(
      async () => {
        await q.add('after');
        const port = (client as unknown as { stream?: { remotePort?: number } }).stream?.remotePort;
        return port === fresh;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: `the client writing to ${fresh}` },
    );
    expect(client.status).toBe('ready');
  } finally {
    setup.resume(asked);
    stopListening();
    client.disconnect();
  }
});
