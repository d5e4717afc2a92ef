/**
 * A SUBSCRIBE that Redis refuses (an ACL without it, granted again later):
 * - a worker whose notice channel reconnects onto it: ioredis' own resubscription left the
 *   refusal unhandled — an unhandled rejection in the application, a crash under Node's
 *   default. The worker now subscribes again itself (lib/redis/connection.ts: subscriber()),
 *   reports the refusal as an 'error' and listens again once allowed;
 * - a canceller that cannot listen for the acknowledgement: cancel() resolved at once, before
 *   the worker holding the job said it would never start it. It now reads the acknowledgement's
 *   key until it is set (lib/queue/cancel-acks.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../../lib/index.js';
import { keysMatching, uniqueName } from '../../support/keys.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';
import { readLog, startWorkerChild, type WorkerChild } from '../../support/worker-child-process.js';

let redis: RedisHandle;
let admin: Redis;
const clients: Redis[] = [];
const children: WorkerChild[] = [];
const dir = mkdtempSync(path.join(os.tmpdir(), 'wq-subscribe-refused-'));
const unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => void unhandled.push(e);

beforeAll(async () => {
  // A private Redis: its users and CLIENT KILL TYPE pubsub concern this file alone.
  redis = await startRedis();
  admin = new Redis(redis.url);
  process.on('unhandledRejection', onUnhandled);
});
afterEach(async () => {
  for (const c of children) if (c.process.signalCode === null) c.process.kill('SIGCONT');
  await Promise.all(children.splice(0).map((c) => c.kill()));
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
  admin.disconnect();
  await redis.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** A client logged in as a new user with every right (`-subscribe`: all but SUBSCRIBE). */
async function userClient(rules: string[] = []): Promise<{ client: Redis; user: string }> {
  const user = uniqueName('u');
  await admin.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', ...rules);
  const client = new Redis(redis.url, { username: user, password: 'pw', retryStrategy: () => 50 });
  client.on('error', () => undefined);
  clients.push(client);
  return { client, user };
}

it("a worker's notice channel reconnecting onto a refused SUBSCRIBE: reported, no unhandled rejection, listening again once allowed", async () => {
  const { client, user } = await userClient();
  const q = new WorkQueue<number>(client, uniqueName(), { logger: false });
  const done: number[] = [];
  const worker = new Worker(q, (job) => void done.push(job.data), { concurrency: 2 });
  const errors: string[] = [];
  worker.on('error', (e) => errors.push(String(e)));
  await worker.start();
  const subscribers = async () =>
    ((await admin.pubsub('NUMSUB', q.keys.noticeChannel)) as unknown[])[1];
  await waitFor(async () => (await subscribers()) === 1, { what: 'the worker subscribed' });

  await admin.call('ACL', 'SETUSER', user, '-subscribe');
  await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
  await waitFor(() => errors.some((e) => e.includes('NOPERM')), {
    what: "the refused SUBSCRIBE reported as the worker's error",
  });
  // A round trip on every connection, for a rejection to surface.
  await q.counts();
  await new Promise((resolve) => setImmediate(resolve));
  expect(unhandled).toEqual([]);

  await admin.call('ACL', 'SETUSER', user, '+subscribe');
  await waitFor(async () => (await subscribers()) === 1, {
    what: 'the worker subscribed again (its retries back off to 5 s)',
    timeoutMs: 10_000,
  });
  await q.add(7);
  await waitFor(() => done.includes(7), { what: 'a job added after it ran' });
  await worker.close();
  expect(unhandled).toEqual([]);
}, 30_000);

it('a canceller whose SUBSCRIBE is refused: cancel() resolves once the worker holding the job acknowledged, not before', async () => {
  const name = uniqueName();
  const prefix = uniqueName('p');
  const execLog = path.join(dir, 'exec.log');
  // A worker process (it can be frozen) running a job that never ends, with more prefetched.
  const child = startWorkerChild({
    redisUrl: redis.url,
    queue: name,
    queueOptions: { prefix },
    workerOptions: { concurrency: 1, prefetch: 3 },
    mode: 'hang',
    execLog,
  });
  children.push(child);
  await child.ready;
  const { client, user } = await userClient(['-subscribe']);
  // (A long timeout: only the worker's acknowledgement ends the wait in this test.)
  const q = new WorkQueue<string>(client, name, {
    logger: false,
    prefix,
    commandTimeoutMs: 20_000,
  });
  // One call: 'running' is handed off to the idle worker, the call that adopts it leases 'held'
  // (a busy worker does not wait for jobs added later).
  const [running, held] = await q.addBulk([{ data: 'running' }, { data: 'held' }]);
  await waitFor(() => readLog(execLog).some((l) => l.id === running!.id), {
    what: 'the first job running',
  });
  await waitFor(async () => (await q.getJob(held!.id))?.state === 'leased', {
    what: 'the second job prefetched by the worker',
  });

  // Frozen, the worker cannot acknowledge.
  child.process.kill('SIGSTOP');
  let resolved = false;
  const cancelled = q.cancel(held!.id).then((r) => ((resolved = true), r));
  // (Its SUBSCRIBE, on a connection it opens then, is refused a few round trips later.)
  await waitFor(
    async () => {
      const log = JSON.stringify(await admin.call('ACL', 'LOG'));
      return log.includes(user) && log.includes('subscribe');
    },
    { what: "the canceller's SUBSCRIBE refused" },
  );
  await q.counts();
  expect(await q.getJob(held!.id)).toBeNull(); // cancelled in Redis
  expect(resolved).toBe(false); // but not acknowledged: the worker is frozen

  child.process.kill('SIGCONT');
  expect(await cancelled).toBe(true);
  // Resolved on the worker's acknowledgement, which it gives once it will never start the job.
  expect(await keysMatching(admin, q.keys.cancelAck('*'))).toHaveLength(1);
}, 30_000);
