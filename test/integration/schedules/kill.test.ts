/**
 * A schedule served by three worker processes, one of them SIGKILLed mid-run: every tick of the
 * run is completed, none twice; a tick runs a second time only when its first run was in the
 * killed process (and was not completed).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';
import { redisNow } from '../../support/core.js';
import { testRedisUrl } from '../../support/keys.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { readLog, startWorkerChild, type WorkerChild } from '../../support/worker-child-process.js';

const fx = new QueueFixture();
const children: WorkerChild[] = [];
const dir = mkdtempSync(path.join(os.tmpdir(), 'wq-sched-kill-'));
afterAll(async () => {
  await Promise.all(children.splice(0).map((c) => c.kill()));
  await fx.cleanup();
  rmSync(dir, { recursive: true, force: true });
});

const EVERY = 100;
const tickOf = (id: string) => Number(id.slice(id.lastIndexOf(':') + 1));

describe('schedules across processes', () => {
  it('every: 100 on 3 worker processes, one SIGKILLed: each tick completed once, none missed', async () => {
    const queueOptions = { heartbeatTimeoutMs: 1_000 };
    const q = fx.queue<number>(queueOptions);
    const clock = fx.client();
    const execLog = path.join(dir, 'exec.log');
    const doneLog = path.join(dir, 'done.log');
    for (let i = 0; i < 3; i++) {
      children.push(
        startWorkerChild({
          redisUrl: testRedisUrl(),
          queue: q.name,
          queueOptions: { ...queueOptions, prefix: q.options.prefix },
          workerOptions: { concurrency: 2, cleanIntervalMs: 200, leaseMs: 30_000 },
          mode: 'work',
          workMs: 60,
          execLog,
          doneLog,
        }),
      );
    }
    await Promise.all(children.map((c) => c.ready));
    expect(await q.upsertSchedule('beat', { every: EVERY }, { data: 1 })).toBe('created');
    const start = await redisNow(clock);
    const ran = () => readLog(execLog).filter((e) => e.id.startsWith('beat:'));

    // Kill the first process to have run 3 ticks (it likely holds one as it dies).
    const busiest = () => {
      const count = new Map<number, number>();
      for (const e of ran()) count.set(e.pid, (count.get(e.pid) ?? 0) + 1);
      return [...count].find(([, n]) => n >= 3)?.[0];
    };
    await waitFor(() => busiest() !== undefined, { what: 'a process to run 3 ticks' });
    const victim = children.find((c) => c.pid === busiest())!;
    await victim.kill();
    const killedAt = await redisNow(clock);
    // Two more seconds of ticks (the dead worker's jobs come back after its heartbeat lapses).
    await waitFor(async () => (await redisNow(clock)) > killedAt + 2_000, { timeoutMs: 10_000 });
    expect(await q.removeSchedule('beat')).toBe(true);
    const end = await redisNow(clock);
    // Every tick up to a second before the end has been completed by now (or within 5 s more).
    const grid: number[] = [];
    const first = Math.min(...ran().map((e) => tickOf(e.id)));
    for (let t = first; t <= end - 1_000; t += EVERY) grid.push(t);
    const done = () => readLog(doneLog).filter((e) => e.id.startsWith('beat:'));
    const killedRan = new Set(
      ran()
        .filter((e) => e.pid === victim.pid)
        .map((e) => e.id),
    );
    await waitFor(
      () => {
        const completed = new Set(done().map((e) => tickOf(e.id)));
        // A tick the victim ran may have been completed by it just before the kill, with its
        // completion log lost: then it never ran again.
        return grid.every((t) => completed.has(t) || killedRan.has(`beat:${t}`));
      },
      { what: 'every tick of the run to complete', timeoutMs: 8_000 },
    );

    const runs = new Map<string, number[]>();
    for (const e of ran()) runs.set(e.id, [...(runs.get(e.id) ?? []), e.pid]);
    const completions = new Map<string, number>();
    for (const e of done()) completions.set(e.id, (completions.get(e.id) ?? 0) + 1);
    const twice = [...runs].filter(([, pids]) => pids.length > 1);
    console.log(
      `schedule across 3 processes, one killed: ${runs.size} ticks over ${end - start} ms, ` +
        `${twice.length} re-run after the kill`,
    );
    // Never completed twice; a second run only after a first one in the killed process.
    expect([...completions.values()].every((n) => n === 1)).toBe(true);
    for (const [id, pids] of twice) {
      expect([id, pids.length, pids[0]]).toEqual([id, 2, victim.pid]);
    }
    // No tick of the grid left out, and ticks only on the grid.
    for (const t of grid) expect(runs.has(`beat:${t}`)).toBe(true);
    for (const id of runs.keys()) expect((tickOf(id) - first) % EVERY).toBe(0);
    await Promise.all(children.filter((c) => c !== victim).map((c) => c.close()));
  }, 60_000);
});
