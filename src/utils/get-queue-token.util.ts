// getQueueToken(name): the injection token of a registered queue.
import { WORK_QUEUE_TOKEN_PREFIX } from '../work-queue.constants.js';

/**
 * Injection token of a registered queue, readable in error messages and debuggers:
 * `getQueueToken('emails') === 'WorkQueue:emails'`. Use it in tests to override or get a queue.
 */
export function getQueueToken(name: string): string {
  return `${WORK_QUEUE_TOKEN_PREFIX}${name}`;
}
