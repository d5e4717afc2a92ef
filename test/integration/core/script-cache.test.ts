/**
 * Scripts on a Redis that lost them (a restart, SCRIPT FLUSH, a failover to a replica): the
 * first script a client sends after the loss is answered NOSCRIPT and sent again with its text;
 * every other script then goes with its text at once, its first time after (no NOSCRIPT round
 * trip each: a worker's first lease after its registration), and by SHA after that.
 */
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../../lib/index.js';
import { countCommands } from '../../support/core.js';
import { uniqueName } from '../../support/keys.js';
import { startRedis } from '../../support/redis-server.js';

/** How many commands Redis refused with NOSCRIPT so far. */
async function noScriptErrors(admin: Redis): Promise<number> {
  const info = await admin.info('errorstats');
  return Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(info)?.[1] ?? 0);
}

describe('scripts after Redis lost them', () => {
  it('one NOSCRIPT answer per client, not one per script: the others go with their text once, then by SHA', async () => {
    // A private Redis: SCRIPT FLUSH would make other files' scripts go again with their text.
    const redis = await startRedis();
    const client = new Redis(redis.url);
    const admin = new Redis(redis.url);
    try {
      const q = new WorkQueue<string>(client, uniqueName(), { logger: false });
      await q.add('a');
      expect((await q.lease()).map((j) => j.data)).toEqual(['a']);
      await admin.script('FLUSH');
      const refusedBefore = await noScriptErrors(admin);
      const sent = countCommands(client);
      expect(await q.add('b')).toEqual({ id: '2', added: true });
      expect(sent.names).toEqual(['evalsha', 'eval']);
      // The lease script, lost too: its text at once.
      expect((await q.lease()).map((j) => j.data)).toEqual(['b']);
      expect(sent.names).toEqual(['evalsha', 'eval', 'eval']);
      expect(await noScriptErrors(admin)).toBe(refusedBefore + 1);
      // Both are in Redis' cache again: by SHA.
      await q.add('c');
      expect((await q.lease()).map((j) => j.data)).toEqual(['c']);
      expect(sent.names.slice(3)).toEqual(['evalsha', 'evalsha']);
      // A client that got no NOSCRIPT answer asks by SHA first, as before.
      const other = new Redis(redis.url);
      try {
        const mine = countCommands(other);
        const q2 = new WorkQueue<string>(other, q.name, { logger: false });
        await q2.ready();
        expect(await q2.counts()).toMatchObject({ pending: 0 });
        expect(mine.names.filter((n) => n.startsWith('eval'))).toEqual(['evalsha', 'eval']);
      } finally {
        await other.quit();
      }
    } finally {
      await client.quit();
      await admin.quit();
      await redis.dispose();
    }
  });
});

describe('a worker starting on a Redis that lost its scripts', () => {
  it("keeps every log line of its first job (a renewal's re-send after NOSCRIPT was overtaken by the job's completion, and found its lease gone)", async () => {
    const redis = await startRedis();
    const client = new Redis(redis.url);
    try {
      const q = new WorkQueue<number>(client, uniqueName(), { logger: false });
      await q.add(0);
      await q.lease();
      await client.script('FLUSH');
      const worker = new Worker(
        q,
        async (job) => {
          for (const line of ['one', 'two', 'three', 'four']) await job.log(line);
          return job.data;
        },
        { concurrency: 4 },
      );
      worker.on('error', () => undefined);
      const { id } = await q.add(1);
      expect(await q.waitForResult(id, { timeoutMs: 5_000 })).toBe(1);
      expect((await q.getJobLogs(id)).lines).toEqual(['one', 'two', 'three', 'four']);
      await worker.close();
      await q.close();
    } finally {
      await client.quit();
      await redis.dispose();
    }
  });
});
