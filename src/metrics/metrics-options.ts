// The checks of the metrics options (registerQueueMetrics, WorkQueueMetricsModule.forRoot): every
// problem listed at once (INVALID_OPTIONS), before any metric is registered.
import { invalidOptions, shown, Worker, WorkQueue } from '../../lib/internal.js';

/** A Prometheus metric name prefix: what a name may start with and hold (or none). */
const PREFIX = /^(?:[a-zA-Z_:][a-zA-Z0-9_:]*)?$/;

const CORE_KEYS = ['queues', 'workers', 'prefix', 'durationBuckets', 'groupLabel', 'waitBuckets'];
const MODULE_KEYS = [
  'registry',
  'prefix',
  'durationBuckets',
  'waitBuckets',
  'queues',
  'groupLabel',
];

/** Problems of histogram buckets `b` (option `name`): finite, positive, increasing, at least one. */
function bucketProblems(name: string, b: unknown): string[] {
  if (b === undefined) return [];
  const ok =
    Array.isArray(b) &&
    b.length > 0 &&
    b.every(
      (x, i) => typeof x === 'number' && Number.isFinite(x) && x > 0 && (i === 0 || x > b[i - 1]),
    );
  return ok ? [] : [`${name} must be increasing positive numbers (seconds), got ${shown(b)}`];
}

/** Problems of a list option: an array of `what` items (`is`), or (core) a function giving one. */
function listProblems(
  name: string,
  v: unknown,
  is: (x: unknown) => boolean,
  what: string,
  fn: boolean,
) {
  if (v === undefined || (fn && typeof v === 'function')) return [];
  if (Array.isArray(v) && v.every(is)) return [];
  return [
    `${name} must be an array of ${what}${fn ? ' or a function giving one' : ''}, got ${shown(v)}`,
  ];
}

/**
 * Throws INVALID_OPTIONS listing every problem of metrics options `o`: those of
 * `registerQueueMetrics` (`core`), or of `WorkQueueMetricsModule.forRoot` (`module`).
 */
export function checkMetricsOptions(o: unknown, kind: 'core' | 'module'): void {
  const title =
    kind === 'core' ? 'registerQueueMetrics refused' : 'invalid WorkQueueMetricsModule options';
  if (o === undefined) return;
  if (typeof o !== 'object' || o === null || Array.isArray(o))
    throw invalidOptions(title, [`options must be an object, got ${shown(o)}`]);
  const v = o as Record<string, unknown>;
  const known = kind === 'core' ? CORE_KEYS : MODULE_KEYS;
  const problems = Object.keys(v)
    .filter((k) => !known.includes(k))
    .map((k) => `unknown option ${JSON.stringify(k)} (known: ${known.join(', ')})`);
  if (v.prefix !== undefined && (typeof v.prefix !== 'string' || !PREFIX.test(v.prefix)))
    problems.push(
      `prefix must be a Prometheus metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*), got ${shown(v.prefix)}`,
    );
  problems.push(...bucketProblems('durationBuckets', v.durationBuckets));
  problems.push(...bucketProblems('waitBuckets', v.waitBuckets));
  if (v.groupLabel !== undefined && typeof v.groupLabel !== 'boolean')
    problems.push(`groupLabel must be a boolean, got ${shown(v.groupLabel)}`);
  if (kind === 'core') {
    problems.push(
      ...listProblems('queues', v.queues, (x) => x instanceof WorkQueue, 'WorkQueues', true),
    );
    problems.push(
      ...listProblems('workers', v.workers, (x) => x instanceof Worker, 'Workers', true),
    );
  } else {
    const name = (x: unknown) => typeof x === 'string' && x.length > 0;
    problems.push(...listProblems('queues', v.queues, name, 'queue names', false));
    const r = v.registry as { registerMetric?: unknown } | null | undefined;
    if (
      r !== undefined &&
      (typeof r !== 'object' || r === null || typeof r.registerMetric !== 'function')
    )
      problems.push(`registry must be a prom-client Registry, got ${shown(r)}`);
  }
  if (problems.length > 0) throw invalidOptions(title, problems);
}
