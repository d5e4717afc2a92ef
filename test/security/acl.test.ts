/**
 * Redis ACLs: the queue works as a user limited to its key prefix, its channels and the commands
 * it needs — and those commands are exactly what a representative workload runs (INFO
 * commandstats), with no ACL denial. A user limited to prefix A cannot touch prefix B through
 * the queue: clear errors, B unchanged, a worker keeps running.
 *
 * The minimal ACL (docs/reliability-and-security.md, Security), for prefix `wq`:
 *   ACL SETUSER wq on >password resetkeys resetchannels ~wq:* &wq:* -@all <COMMANDS of ../support/acl.ts>
 */
import 'reflect-metadata';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { Redis } from 'ioredis';
import { WorkQueueHealthIndicator, WorkQueueHealthModule } from '../../src/health/index.js';
import {
  getQueueToken,
  NonRetryableError,
  WorkQueue,
  WorkQueueCleaner,
  WorkQueueError,
  WorkQueueModule,
  Worker,
} from '../../src/index.js';
import { errorOf } from '../support/core.js';
import { keysMatching } from '../support/keys.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';
import { allPayloads } from '../support/payloads.js';
import { aclRules, COMMANDS } from '../support/acl.js';

let server: RedisHandle;
let admin: Redis;
beforeAll(async () => {
  server = await startRedis();
  admin = new Redis(server.url);
  await admin.call('ACL', 'SETUSER', 'wq', ...(await aclRules(admin, 'wq', 'wq-pass')));
  await admin.call('ACL', 'SETUSER', 'wq-a', ...(await aclRules(admin, 'a', 'a-pass')));
});
afterAll(async () => {
  admin.disconnect();
  await server.dispose();
});

const asUser = (username: string, password: string) =>
  new Redis({ host: server.host, port: server.port, username, password, maxRetriesPerRequest: 2 });

/** Calls per command since the last CONFIG RESETSTAT (server-wide; admin sends none meanwhile). */
async function commandsRun(): Promise<string[]> {
  const info = await admin.info('commandstats');
  return [...info.matchAll(/^cmdstat_([^:]+):calls=\d+/gm)].map((m) => m[1]!).sort();
}

describe('a user limited to ~wq:* &wq:* and the minimal command set', () => {
  it('runs a representative workload with no ACL denial, using exactly those commands', async () => {
    // A duplicated pending entry, so that repair has something to fix (and runs its LPOS path).
    const setup = new WorkQueue(admin, 'acl', { logger: false });
    await setup.add({ tamper: true });
    await admin.rpush(setup.keys.pending(5), '1');
    await admin.call('ACL', 'LOG', 'RESET');
    await admin.config('RESETSTAT');

    const client = asUser('wq', 'wq-pass');
    const warnings: string[] = [];
    const q = new WorkQueue<unknown>(client, 'acl', {
      logger: { warn: (m) => void warnings.push(m), error: (m) => void warnings.push(m) },
      heartbeatTimeoutMs: 400,
      backoff: { type: 'fixed', delayMs: 10 },
    });
    // Before the worker starts: it leases at once, and would take the duplicated job first.
    expect((await q.repair()).fixes).toEqual([expect.stringMatching(/^1: job pending 2 times/)]);
    const errors: unknown[] = [];
    const aborted: string[] = [];
    const holding: string[] = [];
    const done: unknown[] = [];
    const worker = new Worker(
      q,
      async (job) => {
        if (job.data === 'dead') throw new NonRetryableError('refused');
        await job.progress(0.5);
        await job.extend(2_000);
        if (job.data === 'hold' || job.data === 'hold-at-close') {
          // (Its cancel may come before the listener: an aborted signal fires no 'abort'.)
          await new Promise<void>((resolve) => {
            const onAbort = () => {
              aborted.push(job.id);
              resolve();
            };
            if (job.signal.aborted) onAbort();
            else job.signal.addEventListener('abort', onAbort);
            holding.push(job.id);
          });
        }
        done.push(job.data);
        return 'ok';
      },
      { concurrency: 4, idleTimeoutMs: 200 },
    );
    worker.on('error', (e) => errors.push(e));
    await q.add({ n: 1 }, { id: 'cid-1', priority: 1 });
    await q.add({ n: 2 }); // a plain add (add_plain.lua)
    await q.addBulk([{ data: 'dead' }, { data: 'later', opts: { delayMs: 50 } }]);
    await q.add('hold', { id: 'hold' });
    await waitFor(() => done.length >= 3, { what: 'jobs to run' });
    // Past its progress() and extend(): a cancel before them would fail those calls instead.
    await waitFor(() => holding.includes('hold'), { what: 'hold running, waiting for its signal' });
    expect(await q.cancel('hold')).toBe(true);
    await waitFor(() => aborted.includes('hold'), { what: 'the cancel to reach the holder' });
    const [dead] = await q.listDead();
    expect(dead?.reason).toBe('refused');
    expect(await q.retryDead(dead!.id)).toBe(true);
    await waitFor(async () => (await q.counts()).dead === 1, {
      what: 'the retried job to die again',
    });
    expect(await q.purgeDead()).toBe(1);
    await q.clean();
    expect((await q.counts()).workers).toBe(1);
    expect(await q.getJob('cid-1')).toMatchObject({ id: 'cid-1', state: 'completed' });
    // Closing with a job still running gives it back to the front of its queue.
    await q.add('hold-at-close', { id: 'hold-at-close' });
    await waitFor(() => holding.includes('hold-at-close'), { what: 'hold-at-close running' });
    await worker.close({ timeoutMs: 50 });
    expect((await q.getJob('hold-at-close'))?.state).toBe('pending');

    // The Nest layer on the same user: its cleaner (SET NX PX guard) and health indicator (PING).
    @Module({
      imports: [
        WorkQueueModule.forRoot({
          connection: {
            redis: { host: server.host, port: server.port, username: 'wq', password: 'wq-pass' },
          },
          logger: false,
          cleaner: false,
        }),
        WorkQueueModule.registerQueue({ name: 'acl' }),
        TerminusModule,
        WorkQueueHealthModule,
      ],
    })
    class AclApp {}
    const ref = await Test.createTestingModule({ imports: [AclApp] }).compile();
    const app = ref.createNestApplication({ logger: false });
    await app.init();
    const [cleaned] = await app.get(WorkQueueCleaner).runOnce();
    expect(cleaned).toMatchObject({ queue: 'acl', ran: true });
    const health = await app.get(WorkQueueHealthIndicator).isHealthy('queues');
    expect(health.queues.status).toBe('up');
    expect(app.get<WorkQueue>(getQueueToken('acl')).options.prefix).toBe('wq');
    await app.close();
    // Kept completed jobs past their bound are trimmed by the completing call (as every queue
    // does after its first 1 000): with the same commands.
    const kept = new WorkQueue<unknown>(client, 'acl-kept', {
      logger: false,
      keepCompleted: { count: 1, ageMs: 60_000 },
    });
    await kept.addBulk([{ data: 1 }, { data: 2 }, { data: 3 }]);
    for (const lease of await kept.lease({ count: 3 }))
      expect(await kept.complete(lease)).toBe(true);
    expect((await kept.counts()).completed).toBe(1);
    await client.quit();

    expect(errors).toEqual([]);
    expect(warnings).toEqual([]);
    expect(await admin.call('ACL', 'LOG')).toEqual([]);
    // Minimal: every allowed command was needed by the workload (auth, quit and the handshake
    // are always allowed; the admin's INFO/ACL/CONFIG are not counted here).
    const ran = (await commandsRun()).filter(
      (c) =>
        !['hello', 'auth', 'quit', 'client|setinfo', 'acl|log', 'config|resetstat'].includes(c),
    );
    expect(ran).toEqual([...COMMANDS].sort());
  });
});

describe('a user limited to prefix "a" cannot touch prefix "b" through the queue', () => {
  it('every operation on b fails with a clear error, b is unchanged, a worker on b survives', async () => {
    const b = new WorkQueue(admin, 'shared', { prefix: 'b', logger: false });
    await b.add({ secret: 'of b' }, { id: 'b-job' });
    const before = await keysMatching(admin, 'b:*');
    const snapshot = await allPayloads(admin, b.keys);

    const client = asUser('wq-a', 'a-pass');
    client.on('error', () => undefined);
    const own = new WorkQueue(client, 'shared', { prefix: 'a', logger: false });
    await own.add('fine');
    expect((await own.lease())[0]?.data).toBe('fine');

    const intruder = new WorkQueue(client, 'shared', { prefix: 'b', logger: false });
    const ops: Record<string, () => Promise<unknown>> = {
      add: () => intruder.add('x'),
      lease: () => intruder.lease(),
      getJob: () => intruder.getJob('b-job'),
      cancel: () => intruder.cancel('b-job'),
      counts: () => intruder.counts(),
      clean: () => intruder.clean(),
      purgeDead: () => intruder.purgeDead(),
      repair: () => intruder.repair(),
    };
    for (const [name, op] of Object.entries(ops)) {
      const e = (await errorOf(op)) as WorkQueueError;
      expect({ name, code: e.code }).toEqual({ name, code: 'SCRIPT_ERROR' });
      expect(e.message).toMatch(/NOPERM/);
    }
    // A worker on b: it cannot even register; start() rejects, close() resolves.
    const w = new Worker(intruder, () => null, { autostart: false });
    expect(((await errorOf(w.start())) as WorkQueueError).message).toMatch(/NOPERM/);
    await w.close({ timeoutMs: 100 });
    // b's channel is off limits too.
    const sub = asUser('wq-a', 'a-pass');
    await expect(sub.subscribe(b.keys.noticeChannel)).rejects.toThrow(/NOPERM/);
    sub.disconnect();

    expect(await keysMatching(admin, 'b:*')).toEqual(before);
    expect(await allPayloads(admin, b.keys)).toEqual(snapshot);
    client.disconnect();
  });
});
