/**
 * Redis SIGKILLed (AOF `appendfsync always`) while a pipeline of bulk adds runs: after the
 * restart each 2 000-job script is there entirely or not at all.
 */
import { describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { WorkQueue } from '../../lib/index.js';
import { payloadCount } from '../support/payloads.js';
import { startRedis } from '../support/redis-server.js';

describe('Redis SIGKILLed mid-pipeline (AOF appendfsync always)', () => {
  it('after the restart every 2 000-job add script is there entirely or not at all', async () => {
    const aof = await startRedis({ appendonly: true, appendfsync: 'always' });
    const c = new Redis(aof.url, { maxRetriesPerRequest: 0, retryStrategy: () => null });
    c.on('error', () => undefined);
    try {
      const q = new WorkQueue<unknown>(c, 'aof', { logger: false });
      await q.add('warm-up', { id: 'warm' });
      const chunks = 30;
      let killing: Promise<void> | undefined;
      const pending = Array.from({ length: chunks }, (_, ch) =>
        q
          .addBulk(
            Array.from({ length: 2_000 }, (_, i) => ({
              data: { ch, i },
              opts: { id: `c${ch}-${i}`, priority: i % 10 },
            })),
          )
          .then(
            () => {
              // The first acknowledged script (fsynced before its reply): kill -9 mid-stream.
              killing ??= aof.kill();
              return 'acked';
            },
            () => 'failed',
          ),
      );
      const outcomes = await Promise.all(pending);
      await killing;
      c.disconnect();
      await aof.restart();
      const check = new Redis(aof.url);
      try {
        const q2 = new WorkQueue<unknown>(check, 'aof', { logger: false });
        const ids = await check.hkeys(q2.keys.key('callerIds'));
        const perChunk = new Map<number, number>();
        for (const id of ids) {
          const m = /^c(\d+)-/.exec(id);
          if (m) perChunk.set(Number(m[1]), (perChunk.get(Number(m[1])) ?? 0) + 1);
        }
        const sizes = [...perChunk.values()];
        // Whole scripts only: 2 000 jobs per chunk that made it, none of the others.
        expect(sizes.every((n) => n === 2_000)).toBe(true);
        // Every acknowledged add survived (appendfsync always).
        outcomes.forEach((o, ch) => {
          if (o === 'acked') expect(perChunk.get(ch)).toBe(2_000);
        });
        const data = await payloadCount(check, q2.keys);
        expect(data).toBe(1 + 2_000 * perChunk.size);
        const counts = await q2.counts();
        expect(counts.pending).toBe(data);
        expect((await q2.repair()).fixes).toEqual([]);
        // The kill landed mid-stream: some scripts ran, some did not (else the test proves little).
        expect(perChunk.size).toBeGreaterThan(0);
        expect(perChunk.size).toBeLessThan(chunks);
      } finally {
        check.disconnect();
      }
    } finally {
      c.disconnect();
      await aof.dispose();
    }
  });
});
