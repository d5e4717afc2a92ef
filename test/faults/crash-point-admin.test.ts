/**
 * Crash points (crash-point-support.ts) of the operations on a queue's history, dead letters and
 * workers, and of clean, drain and counts.
 */
import { describe, it } from '@jest/globals';
import { WorkQueue } from '../../lib/index.js';
import { useCrashPointRedis } from './crash-point-redis.js';
import { crashEverywhere, OPTIONS, type Op } from './crash-point-support.js';

useCrashPointRedis();

const OPS: Op[] = [
  { name: 'completed: rerun', run: (q) => q.rerun('cid-11') },
  {
    name: 'completed: rerun (grouped: back in its group)',
    run: async (q, s) => {
      await q.complete(s.held[0]!, 'a0');
      return q.rerun(s.held[0]!.id);
    },
  },
  { name: 'completed: purge one', run: (q) => q.purgeCompleted('cid-11') },
  { name: 'completed: purge all', run: (q) => q.purgeCompleted() },
  {
    name: 'clean (trims the kept jobs: keepCompleted false)',
    run: (q) =>
      new WorkQueue(q.client, q.name, {
        ...OPTIONS,
        prefix: q.options.prefix,
        keepCompleted: false,
      }).clean(),
  },
  { name: 'clean (+ reclaim_worker)', run: (q) => q.clean(), lapse: true },
  { name: 'dead: retry', run: (q, s) => q.retryDead(s.deadId) },
  { name: 'dead: purge one', run: (q, s) => q.purgeDead(s.deadId) },
  { name: 'dead: purge all', run: (q) => q.purgeDead() },
  { name: 'worker: register', run: (q) => q.registerWorker() },
  { name: 'worker: leave', run: (q, s) => q.deregisterWorker(s.worker) },
  { name: 'drain (ungrouped and grouped)', run: (q) => q.drain() },
  { name: 'counts', run: (q) => q.counts() },
];

describe('a script runs whole or not at all, wherever the client dies', () => {
  for (const op of OPS) {
    it(`${op.name}`, () => crashEverywhere(op));
  }
});
