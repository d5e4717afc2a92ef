/**
 * Shared by the core tests of typed errors (errors, redis-checks).
 */
import { WorkQueueError } from '../../../lib/index.js';
import { errorOf } from '../../support/core.js';

/** The error code of a rejection / throw (fails when it resolves). */
export async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<unknown> {
  const e = await errorOf(p);
  return e instanceof WorkQueueError ? e.code : e;
}
