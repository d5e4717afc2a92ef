// The checks of isHealthy()'s options (readiness): every problem, one string each — a typo in a
// probe's configuration is an error of the call, never reported as a Redis outage.
import { show, unknownOption } from '../work-queue.messages.js';

const COUNTS = ['maxPending', 'maxDead', 'minWorkers'];
const KNOWN = ['queues', ...COUNTS, 'timeoutMs', 'requireNoEviction'];

/** Every problem with the options of `isHealthy()`. */
export function readinessOptionProblems(options: unknown): string[] {
  if (options === undefined) return [];
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    return [
      `options must be an object { ${KNOWN.map((k) => `${k}?`).join(', ')} }, got ${show(options)}`,
    ];
  }
  const o = options as Record<string, unknown>;
  const problems = Object.keys(o)
    .filter((k) => !KNOWN.includes(k) && o[k] !== undefined)
    .map((k) => unknownOption('', k));
  const { queues, timeoutMs, requireNoEviction } = o;
  if (queues !== undefined && (!Array.isArray(queues) || queues.some((q) => typeof q !== 'string')))
    problems.push(`queues must be an array of queue names, got ${show(queues)}`);
  for (const key of COUNTS) {
    const v = o[key];
    if (v !== undefined && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0))
      problems.push(`${key} must be a non-negative integer, got ${show(v)}`);
  }
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== 'number' ||
      !Number.isInteger(timeoutMs) ||
      timeoutMs <= 0 ||
      timeoutMs > 2_147_483_647)
  )
    problems.push(
      `timeoutMs must be a positive integer (ms) up to 2147483647, got ${show(timeoutMs)}`,
    );
  if (requireNoEviction !== undefined && typeof requireNoEviction !== 'boolean')
    problems.push(`requireNoEviction must be a boolean, got ${show(requireNoEviction)}`);
  return problems;
}
