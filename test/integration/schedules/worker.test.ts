/**
 * Schedules with Workers on separate clients (as separate app instances): every tick fires
 * exactly once, never before its tick on Redis time; prints the lateness observed.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import type { Redis } from 'ioredis';
import { WorkQueue, type Job } from '../../../lib/index.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach((e) => console.error('worker error', e));

async function redisNow(c: Redis): Promise<number> {
  const [s, us] = await c.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

const tickOf = (id: string) => Number(id.slice(id.lastIndexOf(':') + 1));

/** `n` queues of one name, each on its own client (as `n` app instances), each with a Worker. */
async function instances(n: number, fire: (job: Job<number>, at: number) => void) {
  const clock = fx.client();
  const first = fx.queue<number>();
  const queues = [first];
  for (let i = 1; i < n; i++) {
    queues.push(
      new WorkQueue<number>(fx.client(), first.name, {
        logger: false,
        prefix: first.options.prefix,
      }),
    );
  }
  // The Redis time the handler starts at (TIME right away: a few hundred µs after). Started
  // before the schedule exists: a worker's start-up (~0.1-0.6 s here) is not tick lateness.
  await Promise.all(
    queues.map((q) =>
      worker(q, async (job) => fire(job, await redisNow(clock)), { concurrency: 4 }).start(),
    ),
  );
  return { queues, clock };
}

function report(what: string, lateness: number[]): void {
  const s = [...lateness].sort((a, b) => a - b);
  const p = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))];
  if (process.env.SCHED_DEBUG) console.log(lateness.join(' '));
  console.log(
    `${what}: ${s.length} ticks, lateness p50 ${p(0.5)} ms, p99 ${p(0.99)} ms, max ${s.at(-1)} ms`,
  );
}

/** The ticks fired, in order. */
const ticksFrom = (fired: Map<string, number>) =>
  [...fired.keys()].map(tickOf).sort((a, b) => a - b);

/** Whether `ticks` follow each other `ms` apart. */
const steps = (ticks: number[], ms: number) =>
  ticks.every((t, i) => i === 0 || t - ticks[i - 1]! === ms);

describe('schedules across instances', () => {
  it('every: 200 with 3 instances for ~3 s: each tick once, none early, no tick left out', async () => {
    const fired = new Map<string, number>();
    const late: number[] = [];
    const { queues, clock } = await instances(3, (job, at) => {
      fired.set(job.id, (fired.get(job.id) ?? 0) + 1);
      late.push(at - tickOf(job.id));
    });
    // missedAfterMs: lateness on a loaded machine must not coalesce ticks here (the missed
    // policy has tests of its own).
    const spec = { every: 200, missedAfterMs: 60_000 };
    expect(await queues[1]!.upsertSchedule('beat', spec, { data: 1 })).toBe('created');
    expect(await queues[2]!.upsertSchedule('beat', spec, { data: 1 })).toBe('unchanged');
    const start = await redisNow(clock);
    await waitFor(async () => (await redisNow(clock)) > start + 3_200, { timeoutMs: 10_000 });
    // Every tick up to the last one fired (a tick may still be on its way to its handler).
    await waitFor(() => ticksFrom(fired).length >= 14 && steps(ticksFrom(fired), 200), {
      what: '14 ticks, none left out',
    });
    expect([...fired.values()].every((n) => n === 1)).toBe(true);
    expect(Math.min(...late)).toBeGreaterThanOrEqual(0);
    report('every 200 ms, 3 instances', late);
  }, 20_000);

  it("cron '*/1 * * * * *' with 2 instances: once per second", async () => {
    const fired = new Map<string, number>();
    const late: number[] = [];
    const { queues, clock } = await instances(2, (job, at) => {
      fired.set(job.id, (fired.get(job.id) ?? 0) + 1);
      late.push(at - tickOf(job.id));
    });
    const spec = { cron: '*/1 * * * * *', missedAfterMs: 60_000 };
    await Promise.all(queues.map((q) => q.upsertSchedule('sec', spec, { data: 2 })));
    const start = await redisNow(clock);
    await waitFor(async () => (await redisNow(clock)) > start + 3_300, { timeoutMs: 10_000 });
    await waitFor(() => ticksFrom(fired).length >= 3 && steps(ticksFrom(fired), 1000), {
      what: '3 ticks, none left out',
    });
    expect([...fired.values()].every((n) => n === 1)).toBe(true);
    expect(ticksFrom(fired).every((t) => t % 1000 === 0)).toBe(true);
    expect(Math.min(...late)).toBeGreaterThanOrEqual(0);
    report('cron per second, 2 instances', late);
  }, 20_000);

  it('remove stops it: no tick fires after removeSchedule resolves', async () => {
    const fired: number[] = [];
    const { queues, clock } = await instances(2, (job) => void fired.push(tickOf(job.id)));
    await queues[0]!.upsertSchedule('r', { every: 100 }, { data: 3 });
    await waitFor(() => fired.length >= 3, { what: 'three ticks' });
    expect(await queues[1]!.removeSchedule('r')).toBe(true);
    const removedAt = await redisNow(clock);
    // Past the horizon the removed schedule had made (2 s) and some cleans.
    await waitFor(async () => (await redisNow(clock)) > removedAt + 2_500, { timeoutMs: 10_000 });
    expect(fired.filter((t) => t > removedAt)).toEqual([]);
    expect(await queues[0]!.counts()).toMatchObject({ delayed: 0, pending: 0 });
  }, 20_000);
});
