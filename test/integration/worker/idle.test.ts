/**
 * Worker runtime: no polling. An idle worker blocks on Redis (BLPOP on the wake list) with a
 * fallback timeout, so its idle cost is a few commands per several seconds, a new job reaches
 * a handler in about one round trip, and a lost wake-up delays a job by at most the timeout.
 *
 * Every test runs on a private Redis so `INFO commandstats` counts this worker alone.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../../lib/index.js';
import { script } from '../../../lib/scripts/assemble.js';
import type { Handler, WorkerOptions, WorkQueueOptions } from '../../../lib/index.js';
import { commandStats, statsDelta } from '../../support/commandstats.js';
import { uniqueName } from '../../support/keys.js';
import { startRedis, type RedisHandle } from '../../support/redis-server.js';
import { waitFor } from '../../support/wait.js';
import { quantile } from '../../support/worker.js';
import { dataBucketOf } from '../../../lib/keys.js';

let redis: RedisHandle;
let admin: Redis;
const clients: Redis[] = [];
const workers: Worker<never, never>[] = [];

beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close({ timeoutMs: 0 })));
});
afterAll(async () => {
  await Promise.all([admin, ...clients].map((c) => c.quit().catch(() => c.disconnect())));
  await redis.dispose();
});

function queue<T>(options: WorkQueueOptions = {}): WorkQueue<T> {
  const c = new Redis(redis.url);
  clients.push(c);
  return new WorkQueue<T>(c, uniqueName(), { logger: false, ...options });
}

function worker<T>(q: WorkQueue<T>, h: Handler<T, unknown>, o: WorkerOptions = {}): Worker<T> {
  const w = new Worker(q, h, o);
  workers.push(w as unknown as Worker<never, never>);
  w.on('error', (e) => console.error('worker error', e));
  return w;
}

describe('idle Worker', () => {
  it('issues at most a few commands per second besides heartbeats (concurrency 50)', async () => {
    const q = queue<number>({ heartbeatTimeoutMs: 4_000 });
    const seen: number[] = [];
    const w = worker(q, (job) => void seen.push(job.data), { concurrency: 50 });
    await w.start();
    // Settle start-up: the heartbeat thread has connected and beaten (its first beat landed).
    await (w as unknown as { heartbeat: { firstBeat: Promise<void> } }).heartbeat.firstBeat;
    // Prove it is live, then let it go idle (its lease call found nothing; it blocks).
    await q.add(1);
    await waitFor(() => seen.length === 1, { what: 'first job' });
    await waitFor(async () => (await admin.llen(q.keys.wake)) === 0, { what: 'wake consumed' });

    // MONITOR sees every top-level command with its source; commands run inside scripts
    // come from 'lua' (INFO commandstats would count those too, so it is only logged).
    const BEAT_LUA = script('heartbeat').lua;
    const BEAT_SHA = createHash('sha1').update(BEAT_LUA).digest('hex');
    const monitor = await admin.monitor();
    const seenCommands: string[] = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua') return;
      // A beat: the assembled heartbeat script, by EVALSHA (or EVAL after a NOSCRIPT).
      const cmd = args[0]?.toLowerCase();
      const isBeat =
        (cmd === 'evalsha' && args[1] === BEAT_SHA) || (cmd === 'eval' && args[1] === BEAT_LUA);
      seenCommands.push(isBeat ? 'heartbeat' : String(args[0]).toLowerCase());
    });
    const WINDOW_MS = 6_000;
    const before = await commandStats(admin);
    // Time itself must pass: this measures what an idle worker costs over a window.
    await sleep(WINDOW_MS);
    const delta = statsDelta(before, await commandStats(admin));
    monitor.disconnect();
    const mine = seenCommands.filter((c) => c !== 'info'); // INFO: the snapshots above
    const heartbeats = mine.filter((c) => c === 'heartbeat').length;
    const own = mine.filter((c) => c !== 'heartbeat');
    const perSecond = own.length / (WINDOW_MS / 1000);
    const tally = (xs: string[]) =>
      JSON.stringify(
        xs.reduce<Record<string, number>>((a, c) => ((a[c] = (a[c] ?? 0) + 1), a), {}),
      );
    console.log(
      `idle worker (concurrency 50, idleTimeoutMs 5000) over ${WINDOW_MS} ms: ` +
        `${own.length} commands besides heartbeats (${perSecond.toFixed(2)}/s) ${tally(own)}, ` +
        `${heartbeats} heartbeats; INFO commandstats delta (includes commands run inside ` +
        `scripts): ${JSON.stringify(delta)}`,
    );
    // A design property, not a timing: no polling loop. With BLPOP timing out every 5 s and one
    // lease call after each, expect ~1 command/s at most.
    expect(perSecond).toBeLessThanOrEqual(3);
    // ... and it really was waiting on Redis, and beating from the thread (~every 1 s).
    expect(own).toContain('blmove');
    expect(heartbeats).toBeGreaterThanOrEqual(3);
    expect(delta.blmove ?? 0).toBeGreaterThanOrEqual(1);
    expect(seen).toEqual([1]);
  });

  it('add -> handler start latency over 200 sequential adds (logged)', async () => {
    const q = queue<number>();
    const starts = new Map<number, number>();
    const w = worker(q, (job) => void starts.set(job.data, performance.now()), {
      concurrency: 50,
    });
    let completed = 0;
    w.on('completed', () => completed++);
    await w.start();
    await q.add(-1);
    await waitFor(() => completed === 1, { what: 'warm-up job' });
    const latencies: number[] = [];
    for (let i = 0; i < 200; i++) {
      // Wait until the worker is blocked again (its wake token consumed, nothing leased).
      await waitFor(async () => completed === i + 1 && (await admin.llen(q.keys.wake)) === 0, {
        what: `idle before add ${i}`,
        intervalMs: 1,
      });
      const t0 = performance.now();
      await q.add(i);
      await waitFor(() => starts.has(i), { what: `job ${i} started`, intervalMs: 1 });
      latencies.push(starts.get(i)! - t0);
    }
    await waitFor(() => completed === 201, { what: 'all completed' });
    const p50 = quantile(latencies, 0.5);
    const p99 = quantile(latencies, 0.99);
    console.log(
      `add -> handler start, 200 sequential adds to an idle worker: ` +
        `p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms, max ${Math.max(...latencies).toFixed(2)} ms`,
    );
    expect(latencies).toHaveLength(200);
    expect(latencies.every((l) => l > 0)).toBe(true);
  });

  it('a lost wake-up delays a job by at most idleTimeoutMs', async () => {
    const q = queue<string>();
    const seen = new Map<string, number>();
    const w = worker(q, (job) => void seen.set(job.data, performance.now()), {
      concurrency: 50,
      idleTimeoutMs: 500,
    });
    await w.start();
    await q.add('warm');
    await waitFor(() => seen.has('warm'), { what: 'warm-up job' });

    // (Deleting the wake token right after an add races the worker's BLPOP, which usually pops it
    // first; writing the job without one is the deterministic way to lose the wake-up.)
    for (const round of [1, 2, 3]) {
      await waitFor(async () => (await admin.llen(q.keys.wake)) === 0, { what: 'worker idle' });
      // Enqueue behind the queue's back: the payload and the pending entry, no wake token.
      const n = String(await admin.incr(q.keys.key('seqCounter')));
      const t0 = performance.now();
      await admin
        .multi()
        .hset(q.keys.dataBucket(n), n, JSON.stringify(`raw${round}`))
        .sadd(q.keys.dataBuckets, dataBucketOf(n))
        .rpush(q.keys.pending(5), n)
        .exec();
      expect(await admin.llen(q.keys.wake)).toBe(0);
      await waitFor(() => seen.has(`raw${round}`), { what: `raw job ${round}`, timeoutMs: 3_000 });
      const waited = seen.get(`raw${round}`)! - t0;
      console.log(`lost wake-up, round ${round}: picked up after ${waited.toFixed(0)} ms`);
      // idleTimeoutMs, plus Redis' BLPOP timeout granularity (hz 10), a lease round trip and
      // this shared machine's stalls: well under the default idleTimeoutMs (5 000), and no wait
      // for a wake-up that never comes.
      expect(waited).toBeLessThan(500 + 2_000);
    }
  });
});
