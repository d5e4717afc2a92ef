/**
 * Crash points (crash-point-support.ts) of the operations on jobs: adding, leasing, completing,
 * failing, extending, delaying, updating, releasing, cancelling, reporting progress.
 */
import { describe, it } from '@jest/globals';
import { NonRetryableError } from '../../lib/index.js';
import { useCrashPointRedis } from './crash-point-redis.js';
import { crashEverywhere, log, type Op } from './crash-point-support.js';

useCrashPointRedis();

const OPS: Op[] = [
  { name: 'add', run: (q) => q.add({ n: 'new' }, { id: 'cid-new', priority: 2 }) },
  { name: 'add (plain: add_plain.lua)', run: (q) => q.add({ n: 'plain' }) },
  {
    name: 'addBulk (plain: add_plain.lua)',
    run: (q) => q.addBulk([{ data: 'a' }, { data: 'b', opts: { priority: 1, name: 'n' } }]),
  },
  {
    name: 'addBulk (delayed, caller ids, duplicate id)',
    run: (q) =>
      q.addBulk([
        { data: 'a' },
        { data: 'b', opts: { delayMs: 60_000 } },
        { data: 'c', opts: { id: 'cid-1' } },
      ]),
  },
  { name: 'lease', run: (q, s) => q.lease({ count: 2, leaseMs: 60_000, workerId: s.worker }) },
  {
    name: 'complete + lease',
    run: (q, s) =>
      q.completeAndLease([{ lease: s.held[0]! }, { lease: s.held[1]! }], {
        count: 2,
        leaseMs: 60_000,
        workerId: s.worker,
      }),
  },
  {
    name: 'complete + lease (results, logs, trims the kept jobs)',
    run: (q, s) =>
      q.completeAndLease(
        [
          { lease: s.held[0]!, result: 'one', logs: log('a', 'b') },
          { lease: s.held[1]!, logs: { lines: ['c'], dropped: 3 } },
        ],
        { count: 1, leaseMs: 60_000, workerId: s.worker },
      ),
  },
  { name: 'fail (retry)', run: (q, s) => q.fail(s.held[0]!, new Error('boom')) },
  {
    name: 'fail (retry, with log lines)',
    run: (q, s) => q.failAttempt(s.held[0]!, new Error('boom'), {}, log('x', 'y')),
  },
  {
    name: 'extend (with log lines)',
    run: (q, s) => q.renew(s.held, 600_000, new Map([[s.held[1]!, log('renewed')]])),
  },
  {
    name: 'DelayedError (move_to_delayed)',
    run: (q, s) => q.moveToDelayed(s.held[2]!, 60_000, log('see you later')),
  },
  { name: 'updateData (leased job)', run: (q, s) => q.updateLeasedData(s.held[0]!, { n: 'u' }) },
  { name: 'updateData (by id)', run: (q) => q.updateData('cid-6', { n: 'u' }) },
  { name: 'changeDelay (pending)', run: (q) => q.changeDelay('cid-6', 60_000) },
  { name: 'changeDelay (delayed, to now)', run: (q) => q.changeDelay('7', 0) },
  { name: 'fail (dead)', run: (q, s) => q.fail(s.held[1]!, new NonRetryableError('bad')) },
  { name: 'release', run: (q, s) => q.release([s.held[0]!, s.held[2]!]) },
  { name: 'extend', run: (q, s) => q.extend(s.held, 600_000) },
  // The holder's heartbeat has lapsed, so cancel does not wait for its acknowledgement.
  { name: 'cancel (leased)', run: (q, s) => q.cancel(s.held[0]!.id), lapse: true },
  { name: 'cancel (pending)', run: (q) => q.cancel('cid-6') },
  { name: 'progress', run: (q, s) => q.progress(s.held[2]!, { step: 2 }) },
];

describe('a script runs whole or not at all, wherever the client dies', () => {
  for (const op of OPS) {
    it(`${op.name}`, () => crashEverywhere(op));
  }
});
