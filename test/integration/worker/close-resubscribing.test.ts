/**
 * Worker.close() while its notice subscription reconnects: the close lands during the
 * reconnection's ready check (INFO sent, its reply not read yet). ioredis still makes the
 * connection 'ready' when the INFO reply comes, subscribes again by itself on the closing socket
 * and nothing handled that SUBSCRIBE: it failed with a bare "Connection is closed." as an
 * unhandled rejection (seen as every test of test/e2e/sample.test.ts failing, when its last test,
 * now in test/e2e/sample-health.test.ts, restarts Redis and afterAll closes the app under load).
 * lib/redis/connection.ts: closeSubscriber.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Redis, type RedisOptions } from 'ioredis';
import { RECONNECT_OPTIONS, Worker, WorkQueue } from '../../../lib/index.js';
import { uniqueName } from '../../support/keys.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';

let redis: RedisHandle;
let admin: Redis;

beforeAll(async () => {
  // DEBUG SLEEP holds the reconnection's ready check on the server.
  redis = await startRedis({ extraArgs: ['--enable-debug-command', 'local'] });
  admin = new Redis(redis.url);
});
afterAll(async () => {
  admin.disconnect();
  await redis.dispose();
});

it('close() during the ready check of its reconnecting subscriber: no unhandled rejection', async () => {
  // RESP2 without client info: a reconnection's handshake is one round trip, the ready check
  // (INFO), which the server's sleep below holds (RESP3's HELLO would come first). A long
  // disconnectTimeout: ioredis would otherwise destroy the closing socket 2 s after the QUIT,
  // before the sleeping server answers the INFO (under load, it answers within milliseconds).
  const client = new Redis(redis.url, {
    ...RECONNECT_OPTIONS,
    protocol: 2,
    disableClientInfo: true,
    disconnectTimeout: 60_000,
  });
  client.on('error', () => undefined);
  // The connections the worker opens are duplicates of its client: keep them to look at.
  const duplicates: Redis[] = [];
  const duplicate = client.duplicate.bind(client);
  client.duplicate = (override?: Partial<RedisOptions>) => {
    const d = duplicate(override);
    duplicates.push(d);
    return d;
  };
  const q = new WorkQueue<string>(client, uniqueName(), { logger: false });
  const w = new Worker(q, () => 'done');
  w.on('error', () => undefined);
  await w.start();
  await waitFor(
    async () => ((await admin.pubsub('NUMSUB', q.keys.noticeChannel)) as unknown[])[1] === 1,
    { what: 'the worker subscribed to its notice channel' },
  );
  const sub = duplicates.find((d) => d.listenerCount('message') > 0)!;
  let statusAtQuit: string | undefined;
  const quit = sub.quit.bind(sub);
  sub.quit = () => {
    statusAtQuit = sub.status;
    return quit();
  };

  // Drop the subscriber, then hold the server: it reconnects and sends its INFO, unanswered.
  const slept = admin
    .multi()
    .call('CLIENT', 'KILL', 'TYPE', 'pubsub')
    .call('DEBUG', 'SLEEP', '4')
    .exec();
  await waitFor(() => sub.status === 'connect', { what: 'the subscriber in its ready check' });
  await w.close();
  await slept;
  await waitFor(() => sub.status === 'end', { what: 'the subscriber closed' });
  // The failed SUBSCRIBE was an unhandled rejection, which Jest reports as this test's error
  // (the bare ioredis "Connection is closed." at event_handler.js:353): one turn for it to show.
  await new Promise((resolve) => setImmediate(resolve));

  expect(statusAtQuit).toBe('connect'); // closed while its ready check was on its way
  // close() deregistered it. (A beat its heartbeat thread sent before the leave, held by the 4 s
  // sleep past the thread's 2 s bound, may land after the leave: it lists the worker nowhere,
  // test/integration/worker/late-beat.test.ts.)
  expect(await q.getWorkers()).toEqual([]);
  expect(await q.counts()).toMatchObject({ workers: 0 });
  await client.quit();
});
