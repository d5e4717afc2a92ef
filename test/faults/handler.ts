/**
 * What every fault-suite worker process runs (core `Worker` in worker-proc.ts, Nest
 * `@Processor` in nest-worker.ts): the job handler and the append-only logs the orchestrator
 * (run.ts) checks its invariants against.
 *
 * Logs live outside Redis, one file per process and kind, written with synchronous appends so
 * that a line is on disk even when the process is SIGKILLed the next instant:
 * - `exec-<pid>.log`: one line per handler execution (before any work),
 * - `done-<pid>.log`: one line per `completed` event (the job's complete returned true),
 * - `events-<pid>.log`: handler ends (`R`: returned or threw, with the attempt and add try),
 *   aborts, lease losses, failures, worker errors, busy blocks, the worker client's reconnects
 *   (`K`: 'reconnecting' with ioredis' delay, 'ready').
 * Lines are tab-separated: kind, ms (Date.now()), pid, queue, job id, then kind-specific fields.
 */
import type { EventEmitter } from 'node:events';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Job } from '../../lib/index.js';

/**
 * How a job behaves in its handler.
 * - `work`: waits `ms` (async), returns.
 * - `slow`: waits `ms` (async; longer than the lease: renewal keeps it), returns.
 * - `busy`: blocks the event loop for `ms` (longer than heartbeatTimeoutMs), returns. At most
 *   one block per process per `BUSY_GAP_MS`, so a process never blocks longer in a row than its
 *   lease covers (two back-to-back blocks would outlast a renewal period by design).
 * - `hang`: never returns (the worker's jobTimeoutMs fails it, each attempt: dead-lettered).
 * - `hang1`: never returns on attempt 1; works on later attempts.
 * - `exit`: a poison pill: `process.exit(1)` as soon as it runs, taking the jobs running beside
 *   it down with the process (every attempt; its lease expiries dead-letter it).
 */
export type Behavior = 'work' | 'slow' | 'busy' | 'hang' | 'hang1' | 'exit';

export interface FaultJob {
  /** The producer's key of the logical job (the caller id when it has one). */
  k: string;
  /** The producer's add try that stored this payload (1 = first try). */
  t: number;
  b?: Behavior;
  ms?: number;
  /** A flow parent (scenarios/flows.ts): its children's count; it logs how many results it saw. */
  kids?: number;
}

export const BUSY_GAP_MS = 4_000;

export interface FaultLog {
  exec(queue: string, job: Job<FaultJob>): void;
  done(queue: string, job: Job<FaultJob>): void;
  /** The handler of `job` returned (`ok`) or threw: its outcome is on its way to Redis. */
  ended(queue: string, job: Job<FaultJob>, how: 'ok' | 'threw'): void;
  event(kind: string, queue: string, id: string, ...fields: string[]): void;
}

const clean = (s: string) => s.replace(/[\t\n\r]/g, ' ');

export function openLog(dir: string, pid = process.pid): FaultLog {
  const execFile = path.join(dir, `exec-${pid}.log`);
  const doneFile = path.join(dir, `done-${pid}.log`);
  const eventFile = path.join(dir, `events-${pid}.log`);
  return {
    exec(queue, job) {
      appendFileSync(
        execFile,
        `E\t${Date.now()}\t${pid}\t${queue}\t${job.id}\t${job.data.k}\t${job.data.t}\t${job.attempt}\t${job.priority}\n`,
      );
    },
    done(queue, job) {
      appendFileSync(
        doneFile,
        `C\t${Date.now()}\t${pid}\t${queue}\t${job.id}\t${job.data.k}\t${job.data.t}\n`,
      );
    },
    ended(queue, job, how) {
      appendFileSync(
        eventFile,
        `R\t${Date.now()}\t${pid}\t${queue}\t${job.id}\t${job.attempt}\t${job.data.t}\t${how}\n`,
      );
    },
    event(kind, queue, id, ...fields) {
      appendFileSync(
        eventFile,
        [kind, Date.now(), pid, queue, id, ...fields.map(clean)].join('\t') + '\n',
      );
    },
  };
}

/** Log the reconnects of a worker's client (`K` lines): where the time to resume goes. */
export function logReconnects(log: FaultLog, queue: string, client: EventEmitter): void {
  client.on('reconnecting', (ms: unknown) =>
    log.event('K', queue, '-', 'reconnecting', String(ms)),
  );
  client.on('ready', () => log.event('K', queue, '-', 'ready'));
}

let lastBusy = 0;

/** The handler of a fault-suite queue. */
export function faultHandler(queue: string, log: FaultLog) {
  return async (job: Job<FaultJob>): Promise<{ pid: number }> => {
    log.exec(queue, job);
    let out: { pid: number };
    try {
      out = await run(job);
    } catch (e) {
      log.ended(queue, job, 'threw');
      throw e;
    }
    log.ended(queue, job, 'ok');
    return out;
  };

  async function run(job: Job<FaultJob>): Promise<{ pid: number }> {
    if (job.data.kids !== undefined) {
      const seen = Object.keys(await job.getChildrenResults()).length;
      log.event('W', queue, job.id, String(seen), String(job.data.kids));
    }
    job.signal.addEventListener('abort', () => {
      const reason = job.signal.reason as { message?: unknown } | undefined;
      log.event('A', queue, job.id, String(reason?.message ?? reason));
    });
    const { b = 'work', ms = 0 } = job.data;
    switch (b) {
      case 'hang':
        await new Promise(() => undefined);
        break;
      case 'exit':
        log.event('P', queue, job.id, 'poison pill: process.exit(1)');
        process.exit(1);
        break;
      case 'hang1':
        if (job.attempt === 1) await new Promise(() => undefined);
        break;
      case 'busy': {
        if (Date.now() - lastBusy < BUSY_GAP_MS) {
          log.event('B', queue, job.id, 'skipped');
          break;
        }
        const start = Date.now();
        lastBusy = start + ms;
        while (Date.now() - start < ms) {
          /* block the event loop on purpose */
        }
        log.event('B', queue, job.id, 'blocked', String(Date.now() - start));
        break;
      }
      default:
        if (ms > 0) await sleep(ms);
    }
    return { pid: process.pid };
  }
}
