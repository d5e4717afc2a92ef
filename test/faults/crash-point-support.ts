/**
 * What the crash-point test files (crash-point-*.test.ts, one per kind of operation) share.
 *
 * Crash points around every Lua-backed operation: the client dies before its script is sent,
 * after sending but before Redis ran it, or after Redis ran it but before the reply
 * (crash-point-redis.ts), and, for operations made of several scripts (clean = clean +
 * reclaim_worker per dead worker), at each of them. Each time, the queue's state must be exactly
 * the state before that script or exactly the state after it (compared with a twin queue that ran
 * it normally), and `repair()` must find nothing to fix: a script runs whole or not at all.
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from '@jest/globals';
import type { Redis } from 'ioredis';
import { NonRetryableError, WorkQueue, type LeasedJob } from '../../lib/index.js';
import {
  adminClient,
  client,
  crash,
  recordingClient,
  retarget,
  VARIANTS,
  type Recorded,
} from './crash-point-redis.js';
import { redisTime, snapshot } from './crash-point-snapshot.js';

// Heartbeats are judged on timing (a beat after a gap longer than the timeout starts a new
// judging period: the `s` field of the heartbeat record), so the twins A and B, set up at
// different moments, get a timeout no gap of a loaded machine reaches. Only C, whose calls are
// recorded and replayed on both, uses a short one, for the operations that need lapsed workers.
const LONG_HEARTBEAT_MS = 600_000;
const SHORT_HEARTBEAT_MS = 100;

export const OPTIONS = {
  logger: false as const,
  backoff: { type: 'fixed' as const, delayMs: 60_000 },
  // Small, so that completing two more jobs trims (lib/scripts/lib/completed.lua).
  keepCompleted: { count: 2, ageMs: 600_000 },
};

export interface Setup {
  worker: string;
  held: LeasedJob<unknown>[];
  deadId: string;
}

/**
 * The same state in every queue it is run on: a live and a dead registered worker, pending jobs
 * of several priorities (caller ids too), grouped jobs (group A with its own concurrency 2, B
 * with its own rate limit), a delayed job, a due delayed job, three leases of the worker (A0,
 * B0, A1: A is at its concurrency), one of the dead worker (B1), an expired lease, a
 * dead-lettered job, a kept completed job with a result and a log (keepCompleted), a retried
 * one with a log.
 */
async function setup(q: WorkQueue<unknown>): Promise<Setup> {
  const worker = await q.registerWorker();
  const gone = await q.registerWorker();
  await q.addBulk([
    { data: { n: 1 }, opts: { id: 'cid-1', priority: 1 } },
    { data: { n: 2 }, opts: { priority: 3 } },
    { data: { n: 3 }, opts: { id: 'cid-3' } },
    { data: { n: 4 } },
    { data: { n: 5 }, opts: { priority: 9 } },
    { data: { n: 6 }, opts: { id: 'cid-6', priority: 7 } },
    { data: { n: 7 }, opts: { delayMs: 60_000 } },
    { data: { n: 8 } },
    { data: { n: 9 }, opts: { id: 'cid-9' } },
  ]);
  const [doomed] = await q.lease({ count: 1, leaseMs: 60_000, workerId: worker });
  await q.fail(doomed!, new NonRetryableError('setup: dead job'));
  // A kept completed job with a result and a log (keepCompleted), and a retried one with a log.
  await q.add({ n: 11 }, { id: 'cid-11', priority: 0 });
  await q.add({ n: 12 }, { priority: 0 });
  const [kept, retried] = await q.lease({ count: 2, leaseMs: 60_000, workerId: worker });
  await q.completeAndLease([{ lease: kept!, result: { r: 11 }, logs: log('kept') }]);
  await q.failAttempt(retried!, new Error('retry me'), { delayMs: 60_000 }, log('failed once'));
  await q.setGroupConcurrency('A', 2);
  await q.setGroupRateLimit('B', { max: 10, durationMs: 60_000 });
  await q.addBulk([
    { data: { g: 'A0' }, opts: { group: 'A', priority: 0 } },
    { data: { g: 'A1' }, opts: { group: 'A', priority: 0 } },
    { data: { g: 'A2' }, opts: { group: 'A', priority: 0, id: 'cid-a2' } },
    { data: { g: 'B0' }, opts: { group: 'B', priority: 0 } },
    { data: { g: 'B1' }, opts: { group: 'B', priority: 0 } },
    { data: { g: 'B2' }, opts: { group: 'B' } },
  ]);
  const held = await q.lease({ count: 3, leaseMs: 60_000, workerId: worker });
  if (held.map((j) => j.group).join() !== 'A,B,A') throw new Error('setup: A0, B0, A1 leased');
  await q.lease({ count: 1, leaseMs: 60_000, workerId: gone });
  await q.lease({ count: 1, leaseMs: 1 });
  await q.add({ n: 10 }, { delayMs: 1 });
  return { worker, held, deadId: doomed!.id };
}

export const log = (...lines: string[]) => ({ lines, dropped: 0 });

export interface Op {
  name: string;
  run(q: WorkQueue<unknown>, s: Setup): Promise<unknown>;
  /** Wait until every registered worker's heartbeat has lapsed (clean reclaims them, cancel does
   * not wait for their acknowledgement). */
  lapse?: boolean;
}

let round = 0;

/** The SHA1 of a recorded script call's script. */
const scriptOf = (r: Recorded) =>
  r.name === 'eval'
    ? createHash('sha1').update(String(r.args[0])).digest('hex')
    : String(r.args[0]);

/** Fresh twin queues A (crashed) and B (reference) plus C (records the op's scripts). */
async function prepare(op: Op) {
  round += 1;
  const name = `cp${round}`;
  const mk = (prefix: string, c: Redis, heartbeatTimeoutMs = LONG_HEARTBEAT_MS) =>
    new WorkQueue<unknown>(c, name, {
      ...OPTIONS,
      heartbeatTimeoutMs,
      prefix: `${prefix}${round}`,
    });
  const a = mk('a', client());
  const b = mk('b', client());
  const rec = recordingClient();
  const c = mk('c', rec.client, op.lapse ? SHORT_HEARTBEAT_MS : LONG_HEARTBEAT_MS);
  await setup(a);
  await setup(b);
  const sc = await setup(c);
  // Every registered worker's heartbeat lapses (C's clean judges them with the short timeout).
  if (op.lapse) await sleep(SHORT_HEARTBEAT_MS + 50);
  const before = rec.recorded.length;
  await op.run(c, sc);
  const steps = rec.recorded.slice(before).filter((r) => r.ok);
  return { a, b, c, steps };
}

/**
 * Crash the client at every script of `op`, in every variant, each time on fresh twin queues:
 * the crashed queue holds exactly the reference's state before that script or after it.
 */
export async function crashEverywhere(op: Op): Promise<void> {
  const admin = adminClient();
  const first = await prepare(op);
  expect(first.steps.length).toBeGreaterThan(0);
  const outcomes: string[] = [];
  for (let k = 0; k < first.steps.length; k++) {
    for (const variant of VARIANTS) {
      const { a, b, c, steps } = await prepare(op);
      // The same scripts (by SHA1: a script reaches Redis by EVALSHA, or by EVAL after a
      // NOSCRIPT, as the first time it runs on this Redis).
      expect(steps.map(scriptOf)).toEqual(first.steps.map(scriptOf));
      // Every queue of the prefix (a flow's other queues too).
      const prefixOf = (q: WorkQueue<unknown>) => `${q.options.prefix}:`;
      const toA = (r: Recorded) => retarget(r, prefixOf(c), prefixOf(a));
      const toB = (r: Recorded) => retarget(r, prefixOf(c), prefixOf(b));
      for (const done of steps.slice(0, k)) {
        await admin.call(done.name, ...toA(done).args);
        await admin.call(done.name, ...toB(done).args);
      }
      const atB = await redisTime();
      const before = await snapshot(b, atB);
      await admin.call(steps[k]!.name, ...toB(steps[k]!).args);
      const after = await snapshot(b, atB);
      const atA = await redisTime();
      const expected = await crash(toA(steps[k]!), variant);
      const got = await snapshot(a, atA);
      const where = `${op.name}, script ${k + 1}/${steps.length}, ${variant}`;
      expect({ where, state: got }).toEqual({
        where,
        state: expected === 'before' ? before : after,
      });
      const report = await a.repair();
      expect({ where, fixes: report.fixes }).toEqual({ where, fixes: [] });
      outcomes.push(`${k + 1}:${variant}:${expected}`);
    }
  }
  expect(outcomes).toHaveLength(first.steps.length * VARIANTS.length);
}
