/**
 * Bounded waits and re-sent commands (issue 12): an operation with Redis unreachable rejects
 * with REDIS_UNAVAILABLE within `commandTimeoutMs` whatever the client's retry options; an add
 * whose reply is lost and that ioredis re-sends after reconnecting creates its jobs once (a cancel
 * answers as its first run did); a
 * script refused with NOSCRIPT is not sent again once the client quits.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { WorkQueue, type WorkQueueError } from '../../../lib/index.js';
import { countCommands, errorOf } from '../../support/core.js';
import { deleteKeys, uniqueName } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { getFreePort, startRedis } from '../../support/redis-server.js';
import { replyDroppingProxy } from '../../support/reply-dropping-proxy.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

describe('re-sent add calls', () => {
  // Plain jobs go to add_plain.lua, a batch with a caller id to add.lua: both are idempotent.
  // The warm-up loads the script on the connection (ioredis sends it by EVALSHA afterwards).
  it.each([
    [
      'with a caller id (add.lua)',
      { id: 'w' },
      [{ data: 'a' }, { data: 'b' }, { data: 'c', opts: { id: 'c' } }],
    ],
    ['plain (add_plain.lua)', {}, [{ data: 'a' }, { data: 'b' }, { data: 'c' }]],
  ])(
    'an add whose reply was lost is re-sent by ioredis and still creates its jobs once: %s',
    async (_, warm, jobs) => {
      const proxy = await replyDroppingProxy('evalsha');
      const client = new Redis(proxy.url); // default options: re-sends unanswered commands
      client.on('error', () => undefined);
      try {
        const prefix = uniqueName('t');
        const q = new WorkQueue<string>(client, uniqueName(), { logger: false, prefix });
        const check = new WorkQueue<string>(fx.client(), q.name, { logger: false, prefix });
        await q.add('warm-up', warm); // script loaded, start-up checks done
        proxy.arm();
        const added = await q.addBulk(jobs);
        expect(proxy.dropped).toBe(1);
        expect(added.map((r) => r.added)).toEqual([true, true, true]);
        expect(await check.counts()).toMatchObject({ pending: 4 });
        const all = await check.lease({ count: 10 });
        expect(all.map((j) => j.data).sort()).toEqual(['a', 'b', 'c', 'warm-up']);
        expect(added.map((r) => r.id)).toEqual(
          all.filter((j) => j.data !== 'warm-up').map((j) => j.id),
        );
        await deleteKeys(fx.client(), `${prefix}:*`);
      } finally {
        client.disconnect();
        await proxy.close();
      }
    },
  );
});

describe('a re-sent cancel', () => {
  it.each([
    ['a waiting job', {}],
    ['a delayed job', { delayMs: 60_000 }],
  ])('whose reply was lost answers true, as the first run did: %s', async (_, opts) => {
    const marker = uniqueName('cancelled').toLowerCase();
    const proxy = await replyDroppingProxy(marker);
    const client = new Redis(proxy.url); // default options: re-sends unanswered commands
    client.on('error', () => undefined);
    try {
      const prefix = uniqueName('t');
      const q = new WorkQueue<string>(client, uniqueName(), { logger: false, prefix });
      const check = new WorkQueue<string>(fx.client(), q.name, { logger: false, prefix });
      await q.add('x', { ...opts, id: marker });
      expect(await q.cancel('no such job')).toBe(false); // script loaded
      proxy.arm(); // the cancel names the job's id
      expect(await q.cancel(marker)).toBe(true);
      expect(proxy.dropped).toBe(1);
      expect(await check.getJob(marker)).toBeNull();
      expect(await q.cancel(marker)).toBe(false); // another call: no such job now
      await deleteKeys(fx.client(), `${prefix}:*`);
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });
});

describe('a re-sent add call that failed', () => {
  // add_plain.lua writes its call record last: a run that fails leaves none, so that the
  // re-send runs again (and fails the same way) instead of answering "added"
  // for jobs that were never stored.
  it('fails again: its jobs are not answered as added', async () => {
    const proxy = await replyDroppingProxy('evalsha');
    const client = new Redis(proxy.url);
    client.on('error', () => undefined);
    try {
      const prefix = uniqueName('t');
      const q = new WorkQueue<string>(client, uniqueName(), { logger: false, prefix });
      const admin = fx.client();
      await q.add('warm-up'); // script loaded, start-up checks done; seq 1
      // The payload bucket of the next job replaced by a string: its write fails (WRONGTYPE).
      await admin.del(q.keys.dataBucket('2'));
      await admin.set(q.keys.dataBucket('2'), 'oops');
      proxy.arm();
      const e = (await errorOf(q.add('lost'))) as WorkQueueError;
      expect(proxy.dropped).toBe(1);
      expect(e.code).toBe('SCRIPT_ERROR');
      expect(e.message).toMatch(/WRONGTYPE/);
      await deleteKeys(fx.client(), `${prefix}:*`);
    } finally {
      client.disconnect();
      await proxy.close();
    }
  });
});

describe('the call records of a producer', () => {
  // A call deletes the records of answered calls (16 at a time) when it writes its own, last:
  // a call that fails on the way names them again in the next.
  it('are deleted once answered, even when the call that named them failed', async () => {
    const prefix = uniqueName('t');
    const admin = fx.client();
    const q = new WorkQueue<string>(fx.client(), uniqueName(), { logger: false, prefix });
    for (let i = 0; i < 16; i++) await q.add(`a${i}`); // seqs 1..16, 16 answered calls
    // The payload bucket of the next job replaced by a string: the 17th call fails (WRONGTYPE).
    await admin.set(q.keys.dataBucket('17'), 'oops');
    expect(await errorOf(q.add('fails'))).toMatchObject({ code: 'SCRIPT_ERROR' });
    await admin.del(q.keys.dataBucket('17'));
    await q.add('after');
    const records = await admin.keys(q.keys.addCallRecords('*'));
    expect(records).toHaveLength(1);
    expect(await admin.hlen(records[0]!)).toBe(1); // the last call's alone
    await deleteKeys(admin, `${prefix}:*`);
  });
});

describe('a script refused with NOSCRIPT while the client quits', () => {
  // A Redis that lost its scripts (a restart) answers NOSCRIPT: the script is sent again with its
  // text — but not after the caller's QUIT went out. Redis resets a connection written to after
  // QUIT, and the reset drops the replies the client has not read yet: quit() then failed with
  // "Connection is closed." (seen in test/integration/worker/close.test.ts, once in ~20 runs).
  it('is not sent again: quit() resolves, the call fails as REDIS_UNAVAILABLE', async () => {
    const redis = await startRedis();
    const client = new Redis(redis.url);
    client.on('error', () => undefined);
    try {
      const q = new WorkQueue<string>(client, uniqueName(), { logger: false });
      await q.counts(); // start-up checks done, script loaded
      const admin = new Redis(redis.url);
      await admin.script('FLUSH');
      await admin.quit();
      const sent = countCommands(client);
      const call = errorOf(q.counts()); // its EVALSHA goes out now, then the QUIT
      expect(await client.quit()).toBe('OK');
      const e = (await call) as WorkQueueError;
      expect(e.code).toBe('REDIS_UNAVAILABLE');
      expect(sent.names).toEqual(['evalsha', 'quit']);
    } finally {
      client.disconnect();
      await redis.dispose();
    }
  });
});

describe('bounded waits', () => {
  it('with Redis unreachable, every operation rejects with REDIS_UNAVAILABLE within commandTimeoutMs, whatever the client retries', async () => {
    const port = await getFreePort();
    // ioredis defaults: 20 retries per request (about 73 s) before a command fails by itself.
    const client = new Redis({ port, host: '127.0.0.1' });
    client.on('error', () => undefined);
    try {
      const q = new WorkQueue<string>(client, uniqueName(), {
        logger: false,
        commandTimeoutMs: 500,
      });
      for (const op of [
        () => q.add('x'),
        () => q.counts(),
        () => q.getJob('x'),
        () => q.cancel('x'),
        () => q.lease(),
        () => q.clean(),
      ]) {
        const t0 = Date.now();
        const e = (await errorOf(op())) as WorkQueueError;
        const took = Date.now() - t0;
        expect(e.code).toBe('REDIS_UNAVAILABLE');
        // Says what the connection was doing (between two attempts, or in one) when time ran out.
        expect(e.message).toMatch(/no reply from Redis within 500 ms \(connection (re)?connecting/);
        expect(took).toBeLessThan(3_000);
      }
    } finally {
      client.disconnect();
    }
  });
});
