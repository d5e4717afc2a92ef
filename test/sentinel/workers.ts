/**
 * Worker processes on a Sentinel setup for the failover tests: start them, read when and where
 * (which Redis) each one started its jobs, see whether they lease and beat on a new master, and
 * describe where their connections are when something fails.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { WorkQueueOptions } from '../../lib/index.js';
import type { RedisSentinelHandle, SwitchEvent } from '../support/redis-sentinel.js';
import { waitFor } from '../support/wait.js';
import { startWorkerChild, type WorkerChild } from '../support/worker-child-process.js';

export interface Start {
  id: string;
  at: number;
  /** The port of the Redis the worker's client was connected to. */
  port: number;
}

export interface SentinelWorker {
  child: WorkerChild;
  workerId: string;
  /** The jobs it started so far, in order. */
  starts(): Start[];
}

/** `<jobId> <pid> <ms> <port>` lines (test/fixtures/worker-child.ts `startLog`). */
function readStarts(file: string): Start[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => {
      const [id, , at, port] = l.split(' ');
      return { id: id!, at: Number(at), port: Number(port) };
    });
}

/** `count` worker processes of queue `name`, connected through the sentinels, started. */
export async function startSentinelWorkers(
  setup: RedisSentinelHandle,
  o: { name: string; count: number; dir: string; doneLog: string; queueOptions: WorkQueueOptions },
): Promise<SentinelWorker[]> {
  const workers = Array.from({ length: o.count }, (_, i) => {
    const log = path.join(o.dir, `starts-${i}.log`);
    const child = startWorkerChild({
      redisUrl: '',
      // Every connection of the child (duplicates, heartbeat thread) carries its name.
      redisOptions: { sentinels: setup.sentinels, name: setup.name, connectionName: `w${i}` },
      queue: o.name,
      queueOptions: o.queueOptions,
      // A long idle timeout: a parked worker is woken by adds on the master it waits on, not
      // saved by its fallback timer.
      workerOptions: { concurrency: 4, idleTimeoutMs: 20_000 },
      mode: 'work',
      workMs: 5,
      startLog: log,
      doneLog: o.doneLog,
    });
    return { child, workerId: '', starts: () => readStarts(log) };
  });
  for (const w of workers) w.workerId = await w.child.ready;
  return workers;
}

/** Per worker: ms from the promotion to its first job leased from the new master. */
export function resumedAfter(workers: SentinelWorker[], sw: SwitchEvent): Promise<number[]> {
  return waitFor(
    () => {
      const firsts = workers.map((w) => w.starts().find((s) => s.at >= sw.at && s.port === sw.to));
      return firsts.every(Boolean) ? firsts.map((s) => s!.at - sw.at) : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 20, what: `every worker leasing from ${sw.to}` },
  );
}

/** Per worker: ms from the promotion to its first heartbeat on the new master. */
export function beatAfter(
  setup: RedisSentinelHandle,
  workers: SentinelWorker[],
  workersKey: string,
  sw: SwitchEvent,
): Promise<number[]> {
  return waitFor(
    async () => {
      const scores = await Promise.all(
        workers.map((w) => setup.command(sw.to, 'ZSCORE', workersKey, w.workerId)),
      );
      return scores.every((s) => Number(s) >= sw.at)
        ? scores.map((s) => Number(s) - sw.at)
        : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 50, what: `every worker's heartbeat on ${sw.to}` },
  );
}

/** What each worker said and did last, and where the connections named w<i> are. */
export async function diagnose(
  setup: RedisSentinelHandle,
  workers: SentinelWorker[],
  channel: string,
): Promise<string> {
  const lines: string[] = [];
  for (const [i, w] of workers.entries()) {
    lines.push(`worker ${i} (${w.workerId}): last starts ${JSON.stringify(w.starts().slice(-3))}`);
    lines.push(`worker ${i} output:\n${w.child.output().slice(-3000)}`);
  }
  const noise =
    /\s(id|fd|age|idle|qbuf|qbuf-free|argv-mem|multi-mem|obl|oll|omem|tot-mem|events|user|redir|resp|lib-name|lib-ver|rbs|rbp|laddr|db|ssub|watch)=\S*/g;
  for (const port of setup.servers.filter((p) => setup.isRunning(p))) {
    const role = await setup.role(port).catch(String);
    const numsub = await setup.command(port, 'PUBSUB', 'NUMSUB', channel).catch(String);
    lines.push(`node ${port} (${role}): NUMSUB ${JSON.stringify(numsub)}`);
    const list = String(await setup.command(port, 'CLIENT', 'LIST').catch(String));
    for (const l of list.split('\n').filter((x) => / name=w\d /.test(x)))
      lines.push(`  ${l.replace(noise, '')}`);
  }
  return lines.join('\n');
}
