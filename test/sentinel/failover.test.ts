/**
 * Failover under Redis Sentinel (a real local setup: one master, one replica, three sentinels):
 * producers add at a steady rate with `replicaAcks: 1` while two worker processes run; then a
 * manual `SENTINEL FAILOVER`, and once the old master serves as a replica again, a SIGKILL of
 * the new master. Every acknowledged job is completed, every worker leases again from each new
 * master within 5 s of its promotion (its heartbeat thread and event subscription follow too),
 * and no worker stays stopped while jobs are pending.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { QueueEvents, SENTINEL_CLIENT_OPTIONS, WorkQueue } from '../../lib/index.js';
import { uniqueName } from '../support/keys.js';
import {
  startRedisSentinel,
  type RedisSentinelHandle,
  type SwitchEvent,
} from '../support/redis-sentinel.js';
import { waitFor } from '../support/wait.js';
import { readLog } from '../support/worker-child-process.js';
import { beatAfter, diagnose, resumedAfter, startSentinelWorkers } from './workers.js';

let setup: RedisSentinelHandle;
const dir = mkdtempSync(path.join(os.tmpdir(), 'wq-sentinel-test-'));
const cleanups: Array<() => unknown> = [];

beforeAll(async () => {
  setup = await startRedisSentinel();
}, 60_000);

afterAll(async () => {
  for (const c of cleanups.reverse()) await Promise.resolve(c()).catch(() => undefined);
  await setup?.dispose();
  rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const RESUME_BOUND_MS = 5_000;
const STOPPED_BOUND_MS = 30_000;

it('SENTINEL FAILOVER, then SIGKILL of the new master: 0 acknowledged jobs lost, every worker leases again within 5 s of each promotion, none stops', async () => {
  const client = new Redis({
    ...SENTINEL_CLIENT_OPTIONS,
    sentinels: setup.sentinels,
    name: setup.name,
  });
  client.on('error', () => undefined);
  cleanups.push(() => client.disconnect());
  const name = uniqueName('sentinel');
  const queueOptions = { leaseMs: 3_000 };
  const q = new WorkQueue<{ p: string }>(client, name, {
    ...queueOptions,
    logger: false,
    replicaAcks: 1,
    replicaAckTimeoutMs: 500,
  });
  cleanups.push(() => q.close());
  // A reader of the event log (a blocking XREAD on its own connection) in this process.
  const events = new QueueEvents(client, name, { from: '$' });
  cleanups.push(() => events.close());
  await events.ready();
  const heard = new Set<string>();
  events.on('completed', (e) => heard.add(e.id));
  const doneLog = path.join(dir, 'done.log');
  const workers = await startSentinelWorkers(setup, { name, count: 2, dir, doneLog, queueOptions });
  for (const w of workers) cleanups.push(() => w.child.kill());

  let running = true;
  // What the Nest cleaner does: clean() on an interval, surviving its own failures.
  const cleaner = (async () => {
    while (running) {
      await q.clean().catch(() => undefined);
      await sleep(500);
    }
  })();
  const acked = new Map<string, number>(); // caller id -> when acknowledged
  const addErrors = new Map<string, number>();
  const producer = async (tag: string) => {
    for (let i = 0; running; i++) {
      const id = `${tag}-${i}`;
      try {
        await q.add({ p: id }, { id });
        acked.set(id, Date.now());
      } catch (e) {
        const what = String(e instanceof Error ? e.message : e).replace(/\d+/g, 'N');
        addErrors.set(what, (addErrors.get(what) ?? 0) + 1);
        await sleep(50);
      }
      await sleep(5);
    }
  };
  const producers = [producer('A'), producer('B')];
  // The watchdog: a worker that has not leased for 30 s while jobs are pending fails the test.
  const stalls: string[] = [];
  const t0 = Date.now();
  const watchdog = (async () => {
    while (running) {
      await sleep(500);
      const pending = await q.counts().then(
        (c) => c.pending,
        () => 0,
      );
      for (const [i, w] of workers.entries()) {
        const last = Math.max(t0, ...w.starts().map((s) => s.at));
        if (pending > 0 && Date.now() - last > STOPPED_BOUND_MS)
          stalls.push(`worker ${i} has not leased for ${Date.now() - last} ms, ${pending} pending`);
      }
    }
  })();

  const switches: SwitchEvent[] = [];
  cleanups.push(await setup.onSwitch((e) => switches.push(e)));
  const promotion = (n: number) =>
    waitFor(() => switches[n], { timeoutMs: 30_000, what: `promotion ${n + 1}` });
  const first = await setup.master();
  const resumes: number[][] = [];
  let rate: string | undefined;
  const beats: number[][] = [];
  try {
    await waitFor(() => workers.every((w) => w.starts().length >= 20), { what: 'both leasing' });

    // 1. A manual failover: the replica is promoted, the old master (still up) demoted later.
    await setup.failover();
    const sw1 = await promotion(0);
    const before = [...acked.values()].filter((at) => at < sw1.at).length;
    rate = `${Math.round((1000 * before) / (sw1.at - t0))}/s`;
    expect(sw1.from).toBe(first);
    resumes.push(await resumedAfter(workers, sw1));
    beats.push(await beatAfter(setup, workers, q.keys.workers, sw1));
    // The old master serves as a replica again (the sentinels demote it ~10 s after the
    // switch): there is one to promote next.
    expect(await setup.waitStable(40_000)).toBe(sw1.to);

    // 2. SIGKILL of the current master: the old one is promoted back.
    await setup.kill(sw1.to);
    const sw2 = await promotion(1);
    expect(sw2).toMatchObject({ from: sw1.to, to: first });
    resumes.push(await resumedAfter(workers, sw2));
    beats.push(await beatAfter(setup, workers, q.keys.workers, sw2));
    // Both workers listen for cancels and pauses on the new master.
    await waitFor(
      async () => {
        const [, n] = (await setup.command(
          first,
          'PUBSUB',
          'NUMSUB',
          q.keys.noticeChannel,
        )) as unknown[];
        return Number(n) === 2;
      },
      { timeoutMs: 10_000, what: 'both workers subscribed on the new master' },
    );

    // The killed node comes back and is made a replica: adds are acknowledged again.
    await setup.restart(sw1.to);
    const final = await setup.waitStable(40_000);
    // The sentinels may fail over once more while the node rejoins (a master that missed
    // down-after-milliseconds on a loaded machine): the workers follow that one as well.
    for (const sw of switches.slice(2)) resumes.push(await resumedAfter(workers, sw));
    expect(final).toBe(switches.at(-1)!.to);
    const back = Date.now();
    await waitFor(() => [...acked.values()].some((at) => at > back), {
      timeoutMs: 10_000,
      what: 'adds acknowledged again',
    });
  } catch (e) {
    console.log(`FAILED: ${String(e)}\nswitches ${JSON.stringify(switches)}`);
    console.log(await diagnose(setup, workers, q.keys.noticeChannel));
    throw e;
  } finally {
    running = false;
    await Promise.all([...producers, cleaner, watchdog]);
  }

  // Every acknowledged job is completed (its complete returned true), and nothing is left.
  const done = () => new Set(readLog(doneLog).map((l) => l.id));
  const unfinished = () => [...acked.keys()].filter((id) => !done().has(id));
  await waitFor(
    async () => {
      await q.clean();
      const c = await q.counts();
      return unfinished().length === 0 && c.pending + c.leased === 0;
    },
    { timeoutMs: 30_000, intervalMs: 200, what: 'every acknowledged job completed' },
  ).catch(() => undefined);
  const lost = unfinished();
  const counts = await q.counts();
  for (const id of lost) console.log(`LOST ${id}: ${JSON.stringify(await q.getJob(id))}`);

  // A parked worker on the new master wakes for an add (its idle timeout is 20 s).
  const woken = Date.now();
  await q.add({ p: 'wake' }, { id: 'wake' });
  await waitFor(() => done().has('wake'), { timeoutMs: 10_000, what: 'a parked worker woken' });
  // The event reader followed too.
  await waitFor(() => heard.has('wake'), { timeoutMs: 10_000, what: 'the completion heard' });

  const all = resumes.flat().sort((a, b) => a - b);
  const runs = workers.flatMap((w) => w.starts());
  const failedAdds = [...addErrors.values()].reduce((a, b) => a + b, 0);
  console.log(
    `sentinel failover: workers leasing from the new master after ${JSON.stringify(resumes)} ms ` +
      `(p50 ${all[Math.floor((all.length - 1) / 2)]}, max ${all.at(-1)}); heartbeats after ` +
      `${JSON.stringify(beats)} ms; acknowledged adds ${acked.size} (${rate ?? '?'} before the failover), lost ${lost.length}; ` +
      `handler runs ${runs.length} (${runs.length - new Set(runs.map((r) => r.id)).size} repeated); failed adds ` +
      `${failedAdds}; parked wake-up ${Date.now() - woken} ms`,
    Object.fromEntries(addErrors),
  );
  expect(stalls).toEqual([]);
  expect(lost).toEqual([]);
  expect(counts).toMatchObject({ pending: 0, leased: 0, delayed: 0, dead: 0 });
  for (const ms of [...all, ...beats.flat()]) expect(ms).toBeLessThanOrEqual(RESUME_BOUND_MS);
  for (const w of workers) {
    await w.child.close();
    expect(w.child.process.exitCode).toBe(0);
  }
});
