// QueueEvents: typed events as an EventEmitter and an async iterable; every event exactly once,
// in order, across CLIENT KILL and across a Redis kill + restart with AOF; close() bounded.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { QueueEvents, WorkQueue, type QueueEvent } from '../../../lib/index.js';
import { parseEntry } from '../../../lib/events/parse.js';
import { uniqueName } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());

/** Collects a reader's events (as 'kind id'). */
function collect(r: QueueEvents): string[] {
  const seen: string[] = [];
  r.on('event', (e) => seen.push(`${e.kind} ${e.id}`));
  return seen;
}

describe('QueueEvents', () => {
  it('emits typed events by kind and as "event"; iterates them in order', async () => {
    const q = fx.queue({ storeResults: { ttlMs: 10_000 } });
    const r = new QueueEvents(fx.client(), q.name, { prefix: q.options.prefix });
    try {
      expect(await r.ready()).toBe(true);
      const completed: QueueEvent[] = [];
      r.on('completed', (e) => completed.push(e));
      const it = r[Symbol.asyncIterator]();
      const { id } = await q.add('x');
      const [job] = await q.lease();
      await q.complete(job!, 42);
      const kinds: string[] = [];
      for (let i = 0; i < 3; i++) {
        const next = await it.next();
        kinds.push(`${next.value!.kind} ${next.value!.id}`);
      }
      expect(kinds).toEqual([`added ${id}`, `active ${id}`, `completed ${id}`]);
      expect(completed).toEqual([
        expect.objectContaining({ kind: 'completed', id, resultStored: true }),
      ]);
      expect(r.lastId).toMatch(/^\d+-\d+$/);
    } finally {
      await r.close();
    }
    // Iteration ends with close().
    expect(await r[Symbol.asyncIterator]().next()).toEqual({ done: true, value: undefined });
  });

  it("from: '0' replays what the log holds; from: <lastId> resumes after it", async () => {
    const q = fx.queue();
    const a = await q.add('a');
    const r1 = new QueueEvents(fx.client(), q.name, { prefix: q.options.prefix, from: '0' });
    const seen1 = collect(r1);
    await waitFor(() => seen1.length === 1, { what: 'the replayed event' });
    const resumeAt = r1.lastId!;
    await r1.close();
    const b = await q.add('b');
    const r2 = new QueueEvents(fx.client(), q.name, { prefix: q.options.prefix, from: resumeAt });
    const seen2 = collect(r2);
    try {
      await waitFor(() => seen2.length === 1, { what: 'the event after lastId' });
      expect(seen1).toEqual([`added ${a.id}`]);
      expect(seen2).toEqual([`added ${b.id}`]);
    } finally {
      await r2.close();
    }
  });

  it('refuses bad options, listing every problem', () => {
    expect(() => new QueueEvents(fx.client(), 'bad name', { from: 'later', blockMs: 0 })).toThrow(
      /queue name.*from must be.*blockMs must be/s,
    );
  });

  it('close() is bounded with Redis unreachable', async () => {
    const c = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 1 });
    c.on('error', () => undefined);
    const r = new QueueEvents(c, uniqueName());
    expect(await r.ready(200)).toBe(false);
    await r.close();
    c.disconnect();
  });
});

describe('QueueEvents across dropped connections and restarts (private Redis, AOF)', () => {
  let redis: RedisHandle;
  const clients: Redis[] = [];
  const client = () => {
    const c = new Redis(redis.url, { maxRetriesPerRequest: null });
    c.on('error', () => undefined);
    clients.push(c);
    return c;
  };
  beforeAll(async () => {
    redis = await startRedis({ appendonly: true, appendfsync: 'always' });
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.quit().catch(() => c.disconnect())));
    await redis.dispose();
  });

  /** The queue's log read directly (from the start), as 'kind id'. */
  async function truth(q: WorkQueue): Promise<string[]> {
    const entries = await client().xrange(q.keys.eventLog, '-', '+');
    return entries.flatMap(([id, f]) => parseEntry(id, f)).map((e) => `${e.kind} ${e.id}`);
  }

  it('CLIENT KILL TYPE normal while events flow: each event once, in order', async () => {
    const q = new WorkQueue(client(), uniqueName(), { logger: false });
    const r = new QueueEvents(client(), q.name);
    const seen = collect(r);
    const admin = client();
    try {
      expect(await r.ready()).toBe(true);
      const added: string[] = [];
      let stop = false;
      const producing = (async () => {
        while (!stop) {
          try {
            added.push((await q.add('x')).id);
          } catch {
            /* the kill cut this add: it may or may not have happened (the log tells) */
          }
        }
      })();
      for (let k = 0; k < 5; k++) {
        const before = seen.length;
        await waitFor(() => seen.length > before + 20, { what: 'events flowing' });
        await admin.call('CLIENT', 'KILL', 'TYPE', 'normal');
      }
      stop = true;
      await producing;
      const all = await truth(q);
      await waitFor(() => seen.length >= all.length, { what: 'the reader to catch up' });
      expect(seen).toEqual(all);
      for (const id of added) expect(seen).toContain(`added ${id}`);
    } finally {
      await r.close();
    }
  });

  it('Redis killed and restarted (AOF): each event once, in order, also those logged meanwhile', async () => {
    const q = new WorkQueue(client(), uniqueName(), { logger: false });
    const r = new QueueEvents(client(), q.name);
    const seen = collect(r);
    try {
      expect(await r.ready()).toBe(true);
      for (let i = 0; i < 20; i++) await q.add(i);
      await waitFor(() => seen.length === 20, { what: 'the first 20 events' });
      await redis.kill();
      await redis.restart();
      // Logged while the reader reconnects (its read was cut by the kill).
      for (let i = 0; i < 20; i++) await q.add(i);
      const all = await truth(q);
      expect(all).toHaveLength(40);
      await waitFor(() => seen.length >= 40, { timeoutMs: 15_000, what: 'the reader to catch up' });
      expect(seen).toEqual(all);
    } finally {
      await r.close();
    }
  });
});
