/**
 * Crash points (crash-point-support.ts) of the operations on groups
 * (lib/scripts/lib/groups.lua): every script that changes a group's state.
 */
import { describe, it } from '@jest/globals';
import { useCrashPointRedis } from './crash-point-redis.js';
import { crashEverywhere, type Op } from './crash-point-support.js';

useCrashPointRedis();

const OPS: Op[] = [
  {
    name: 'add (grouped: add.lua)',
    run: (q) => q.addBulk([{ data: 'g', opts: { group: 'C' } }, { data: 'h' }]),
  },
  {
    name: 'addBulk (grouped, delayed, caller id)',
    run: (q) =>
      q.addBulk([
        { data: 'a', opts: { group: 'A', id: 'cid-ga' } },
        { data: 'b', opts: { group: 'D', delayMs: 60_000 } },
      ]),
  },
  { name: 'rate limited (grouped job)', run: (q, s) => q.rateLimited(s.held[1]!, 30_000) },
  { name: 'group: pause', run: (q) => q.pauseGroup('A') },
  { name: 'group: resume', run: (q) => q.pauseGroup('B').then(() => q.resumeGroup('B')) },
  { name: 'group: concurrency', run: (q) => q.setGroupConcurrency('A', 3) },
  {
    name: 'group: rate limit',
    run: (q) => q.setGroupRateLimit('A', { max: 1, durationMs: 60_000 }),
  },
  { name: 'group: drain', run: (q) => q.drainGroup('B') },
  { name: 'group: list', run: (q) => q.getGroups() },
  { name: 'change priority (grouped)', run: (q) => q.changePriority('cid-a2', 1) },
];

describe('a script runs whole or not at all, wherever the client dies', () => {
  for (const op of OPS) {
    it(`${op.name}`, () => crashEverywhere(op));
  }
});
