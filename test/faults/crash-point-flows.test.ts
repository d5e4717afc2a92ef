/** Crash points (crash-point-support.ts) of the flow operations (crash-point-flows.ts). */
import { describe, it } from '@jest/globals';
import { FLOW_OPS } from './crash-point-flows.js';
import { useCrashPointRedis } from './crash-point-redis.js';
import { crashEverywhere, type Op } from './crash-point-support.js';

useCrashPointRedis();

const OPS: Op[] = FLOW_OPS;

describe('a script runs whole or not at all, wherever the client dies', () => {
  for (const op of OPS) {
    it(`${op.name}`, () => crashEverywhere(op));
  }
});
