/**
 * Worker runtime at scale: 10,000 jobs through 4 worker processes (concurrency 25 each).
 * Every job is completed exactly once and none is lost, also when one process is SIGKILLed
 * mid-run and replaced: then only jobs that were in flight in the killed process may run twice.
 *
 * Evidence: the children append `<id> <pid>` to an execution log when a handler starts and to a
 * completion log on each `completed` event (synchronous appends, so a SIGKILL loses nothing
 * written); results are stored, so Redis itself tells which jobs were completed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import type { WorkQueue, WorkQueueOptions } from '../../../lib/index.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import {
  readLog,
  startWorkerChild,
  type ChildConfig,
  type WorkerChild,
} from '../../support/worker-child-process.js';

const fx = new QueueFixture();
const children: WorkerChild[] = [];
const dir = mkdtempSync(path.join(os.tmpdir(), 'wq-scale-'));
afterEach(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill()));
});
afterAll(async () => {
  await fx.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const JOBS = 10_000;
const PROCESSES = 4;
const CONCURRENCY = 25;
const QUEUE_OPTIONS: WorkQueueOptions = {
  heartbeatTimeoutMs: 1_000,
  storeResults: { ttlMs: 10 * 60_000 },
};

function setup(label: string) {
  const q = fx.queue<number>(QUEUE_OPTIONS);
  const execLog = path.join(dir, `${label}-exec.log`);
  const doneLog = path.join(dir, `${label}-done.log`);
  const config: ChildConfig = {
    redisUrl: testRedisUrl(),
    queue: q.name,
    queueOptions: { ...QUEUE_OPTIONS, prefix: q.options.prefix },
    // The test's own clean() loop reclaims (and counts) dead workers: workers do not clean here.
    workerOptions: { concurrency: CONCURRENCY, cleanIntervalMs: 0 },
    mode: 'work',
    workMs: 4,
    execLog,
    doneLog,
  };
  const spawn = () => {
    const c = startWorkerChild(config);
    children.push(c);
    return c;
  };
  return { q, execLog, doneLog, spawn };
}

async function addAll(q: WorkQueue<number>): Promise<string[]> {
  const added = await q.addBulk(Array.from({ length: JOBS }, (_, data) => ({ data })));
  expect(added.every((a) => a.added)).toBe(true);
  return added.map((a) => a.id);
}

/** How many times each id appears in a log. */
function tally(lines: Array<{ id: string }>): Map<string, number> {
  const m = new Map<string, number>();
  for (const { id } of lines) m.set(id, (m.get(id) ?? 0) + 1);
  return m;
}

/** Ids whose result Redis stored (= whose complete returned true), via HSCAN. */
async function completedInRedis(q: WorkQueue<number>): Promise<Set<string>> {
  const c = fx.client();
  const ids = new Set<string>();
  let cursor = '0';
  do {
    const [next, flat] = await c.hscan(q.keys.key('results'), cursor, 'COUNT', 1000);
    for (let i = 0; i < flat.length; i += 2) ids.add(flat[i]!);
    cursor = next;
  } while (cursor !== '0');
  return ids;
}

describe(`Worker scale: ${JOBS} jobs, ${PROCESSES} processes x concurrency ${CONCURRENCY}`, () => {
  it('every job completed exactly once, none lost', async () => {
    const { q, execLog, doneLog, spawn } = setup('plain');
    const procs = Array.from({ length: PROCESSES }, spawn);
    await Promise.all(procs.map((p) => p.ready));
    const t0 = Date.now();
    const ids = await addAll(q);
    await waitFor(() => readLog(doneLog).length >= JOBS, {
      what: `${JOBS} completions`,
      timeoutMs: 40_000,
      intervalMs: 100,
    });
    const ms = Date.now() - t0;
    const done = readLog(doneLog);
    const perPid = tally(done.map((d) => ({ id: String(d.pid) })));
    console.log(
      `${JOBS} jobs through ${PROCESSES} processes: ${ms} ms (${Math.round((JOBS / ms) * 1000)} jobs/s); ` +
        `per process ${JSON.stringify([...perPid.values()])}`,
    );
    const doneCount = tally(done);
    expect(done).toHaveLength(JOBS);
    expect([...doneCount.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(doneCount.keys())).toEqual(new Set(ids));
    // Every handler ran once: no job was run twice without a crash.
    expect(readLog(execLog)).toHaveLength(JOBS);
    expect((await completedInRedis(q)).size).toBe(JOBS);
    // All four took part.
    expect(perPid.size).toBe(PROCESSES);
    expect(await q.counts()).toMatchObject({ pending: 0, delayed: 0, leased: 0, dead: 0 });

    await Promise.all(procs.map((p) => p.close()));
    expect((await q.counts()).workers).toBe(0);
  });

  it('one process SIGKILLed mid-run and restarted: none lost, duplicates only of its in-flight jobs', async () => {
    const { q, execLog, doneLog, spawn } = setup('kill');
    const procs = Array.from({ length: PROCESSES }, spawn);
    await Promise.all(procs.map((p) => p.ready));
    const ids = await addAll(q);
    const victim = procs[0]!;

    // Let it run a while, then kill one process hard and start a replacement.
    await waitFor(() => readLog(doneLog).length >= JOBS / 4, {
      what: 'a quarter done',
      timeoutMs: 30_000,
      intervalMs: 20,
    });
    await victim.kill();
    const killedAt = Date.now();
    const replacement = spawn();
    await replacement.ready;

    // Meanwhile clean() reclaims the dead process's jobs once its heartbeat lapses.
    let reclaimed = 0;
    let deadWorkers = 0;
    const done = await completedInRedis(q);
    for (;;) {
      if (Date.now() - killedAt > 40_000) throw new Error('jobs not all completed after 40 s');
      const r = await q.clean();
      reclaimed += r.reclaimedFromWorkers + r.reclaimed;
      deadWorkers += r.deadWorkers;
      const c = await q.counts();
      if (c.pending + c.leased + c.delayed === 0) break;
      await sleep(250);
    }
    for (const id of await completedInRedis(q)) done.add(id);
    // A survivor logs a completion once its reply is back, after Redis has it: closed, every
    // line is written.
    await Promise.all([...procs.slice(1), replacement].map((p) => p.close()));

    const exec = readLog(execLog);
    const doneLines = readLog(doneLog);
    const startedByVictim = new Set(exec.filter((e) => e.pid === victim.pid).map((e) => e.id));
    const doneByVictim = new Set(doneLines.filter((e) => e.pid === victim.pid).map((e) => e.id));
    // In flight in the killed process: started there, never logged as completed there.
    const inFlight = new Set([...startedByVictim].filter((id) => !doneByVictim.has(id)));
    const execCount = tally(exec);
    const duplicates = [...execCount].filter(([, n]) => n > 1).map(([id]) => id);
    const doneCount = tally(doneLines);
    console.log(
      `kill -9 one of ${PROCESSES} processes: ${startedByVictim.size} jobs started there, ` +
        `${inFlight.size} in flight when killed, ${reclaimed} reclaimed from ${deadWorkers} dead ` +
        `worker(s), ${duplicates.length} jobs ran twice`,
    );

    // None lost: Redis completed every job (its result is stored) and nothing is left.
    expect(done.size).toBe(JOBS);
    expect(new Set(done)).toEqual(new Set(ids));
    expect(await q.counts()).toMatchObject({ pending: 0, delayed: 0, leased: 0, dead: 0 });
    expect(deadWorkers).toBe(1);
    // Every job ran at least once.
    expect(execCount.size).toBe(JOBS);
    // Completion is decided once: no job was logged as completed twice.
    expect([...doneCount.values()].every((n) => n === 1)).toBe(true);
    // A job without a completion line completed in the killed process, whose reply was lost.
    const unlogged = ids.filter((id) => !doneCount.has(id));
    expect(unlogged.filter((id) => !inFlight.has(id))).toEqual([]);
    // Only jobs in flight in the killed process ran twice.
    expect(duplicates.filter((id) => !inFlight.has(id))).toEqual([]);
    expect(duplicates.every((id) => execCount.get(id) === 2)).toBe(true);
    // In flight = running or finished with the complete not yet confirmed: each was held, or
    // asked for, when the last lease call answered before the kill was sent (calls are answered
    // in order, and that call carried every complete then waiting), and a worker holds plus asks
    // for at most its room: concurrency + prefetch ('auto': at most concurrency + 128, two lease
    // calls' worth; lib/worker/lease-sizing.ts).
    expect(inFlight.size).toBeLessThanOrEqual(CONCURRENCY + (CONCURRENCY + 128));
    expect((await q.counts()).workers).toBe(0);
  });
});
