// Prometheus metrics of queues and workers (nestjs-work-queue/metrics, peer prom-client): gauges
// read from counts() at scrape time, counters and a duration histogram fed by worker events.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { checkMetricsOptions } from './metrics-options.js';
import {
  stepOf,
  type Job,
  type QueueCounts,
  type Worker,
  type WorkQueue,
} from '../../lib/internal.js';

type Source<X> = readonly X[] | (() => readonly X[]);

export interface QueueMetricsOptions {
  /** Queues whose counts are gauges (read at each scrape), or a function giving them. */
  queues?: Source<WorkQueue>;
  /** Workers of this process whose events are counted, or a function giving them (each scrape). */
  workers?: Source<Worker>;
  /** Metric name prefix. Default `work_queue_`. */
  prefix?: string;
  /** Buckets (seconds) of the handler duration histogram. */
  durationBuckets?: number[];
  /**
   * Label the per-process counters and the duration histogram by the job's group too
   * (`group`, '' for an ungrouped job; docs/groups.md). Default false: a label per group is a
   * time series per group — only for a bounded number of groups.
   */
  groupLabel?: boolean;
  /** Buckets (seconds) of the wait time histogram (added → first start). */
  waitBuckets?: number[];
}

/** What `registerQueueMetrics` returns. */
export interface QueueMetrics {
  /** Count a worker's events from now on (no-op when it is counted already). */
  addWorker(worker: Worker): void;
  /** Pick up the queues and workers the option functions give now (done at each scrape). */
  refresh(): void;
  /** Stop counting (listeners and hooks removed) and remove the metrics from the registry. */
  close(): void;
}

const STATES = ['pending', 'delayed', 'leased', 'dead', 'waitingChildren', 'completed'] as const;
/**
 * The state label of each (flow parents waiting for their children: `waiting-children`; kept
 * completed jobs: `completed`).
 */
const LABEL: Record<(typeof STATES)[number], string> = {
  pending: 'pending',
  delayed: 'delayed',
  leased: 'leased',
  dead: 'dead',
  waitingChildren: 'waiting-children',
  completed: 'completed',
};
const NAMES = [
  'jobs',
  'workers',
  'paused',
  'scrape_errors_total',
  'jobs_completed_total',
  'jobs_failed_total',
  'jobs_retried_total',
  'jobs_dead_total',
  'leases_lost_total',
  'job_duration_seconds',
  'job_wait_seconds',
];
const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];

interface Snapshot {
  queue: WorkQueue;
  counts?: QueueCounts;
  paused?: boolean;
}

/** A list option's items now (a function giving no array: none). */
const listOf = <X>(s: Source<X> | undefined): readonly X[] => {
  const list: unknown = typeof s === 'function' ? s() : s;
  return Array.isArray(list) ? (list as X[]) : [];
};

/**
 * Register the metrics of `queues` and `workers` in `registry`:
 *
 * - `work_queue_jobs{queue,state}` (pending, delayed, leased, dead, waiting-children, kept
 *   completed), `work_queue_workers{queue}`
 *   (live workers, all processes) and `work_queue_paused{queue}`: one `counts()` and one
 *   `flowState()` per queue per scrape;
 * - per process, from the workers' events: `work_queue_jobs_completed_total`, `_failed_total`
 *   (every failed attempt), `_retried_total`, `_dead_total`, `work_queue_leases_lost_total`
 *   and `work_queue_job_duration_seconds{queue,outcome}` (outcome `success`, `error`, or for a run a
 *   `DelayedError` or `RateLimitError` ended `delayed` or `rate_limited`);
 * - `work_queue_job_wait_seconds{queue}`: how long each job of this process waited from its add
 *   to the start of its first attempt (Redis times; a delayed job's delay included; a run a
 *   DelayedError or RateLimitError ended does not count an attempt: the next is observed too);
 * - `work_queue_scrape_errors_total{queue}`: scrapes whose counts could not be read.
 *
 * With `groupLabel`, the per-process counters and the histogram also carry `group`.
 */
export function registerQueueMetrics(
  registry: Registry,
  options: QueueMetricsOptions = {},
): QueueMetrics {
  checkMetricsOptions(options, 'core');
  const p = options.prefix ?? 'work_queue_';
  const registers = [registry];
  let pending: Promise<Snapshot[]> | undefined;
  // The gauges' collect callbacks of one scrape run together: they share one read per queue.
  const snapshot = (): Promise<Snapshot[]> => {
    metrics.refresh();
    pending ??= Promise.all(
      listOf(options.queues).map(async (queue): Promise<Snapshot> => {
        try {
          const [counts, flow] = await Promise.all([queue.counts(), queue.flowState()]);
          return { queue, counts, paused: flow.paused };
        } catch {
          scrapeErrors.inc({ queue: queue.name });
          return { queue };
        }
      }),
    ).finally(() => {
      pending = undefined;
    });
    return pending;
  };
  const jobs = new Gauge({
    name: `${p}jobs`,
    help: 'Jobs in the queue by state (all processes), read at scrape time.',
    labelNames: ['queue', 'state'],
    registers,
    async collect() {
      const snaps = await snapshot();
      jobs.reset();
      for (const { queue, counts } of snaps)
        if (counts)
          for (const state of STATES)
            jobs.set({ queue: queue.name, state: LABEL[state] }, counts[state]);
    },
  });
  const workers = new Gauge({
    name: `${p}workers`,
    help: 'Workers of the queue whose heartbeat is fresh (all processes).',
    labelNames: ['queue'],
    registers,
    async collect() {
      const snaps = await snapshot();
      workers.reset();
      for (const { queue, counts } of snaps)
        if (counts) workers.set({ queue: queue.name }, counts.workers);
    },
  });
  const paused = new Gauge({
    name: `${p}paused`,
    help: '1 when the queue is paused (queue.pause()), else 0.',
    labelNames: ['queue'],
    registers,
    async collect() {
      const snaps = await snapshot();
      paused.reset();
      for (const s of snaps)
        if (s.paused !== undefined) paused.set({ queue: s.queue.name }, s.paused ? 1 : 0);
    },
  });
  const byGroup = options.groupLabel === true;
  const labelNames = byGroup ? ['queue', 'group'] : ['queue'];
  const counter = (name: string, help: string) =>
    new Counter({ name: `${p}${name}`, help, labelNames, registers });
  const scrapeErrors = new Counter({
    name: `${p}scrape_errors_total`,
    help: 'Scrapes that could not read the queue.',
    labelNames: ['queue'],
    registers,
    // The scrape's read first: a scrape that fails counts itself.
    async collect() {
      await snapshot();
    },
  });
  const completed = counter('jobs_completed_total', 'Jobs this process completed.');
  const failed = counter('jobs_failed_total', 'Failed attempts of jobs in this process.');
  const retried = counter('jobs_retried_total', 'Failed jobs of this process set to retry.');
  const dead = counter('jobs_dead_total', 'Failed jobs of this process dead-lettered.');
  const lost = counter('leases_lost_total', 'Leases this process lost before the job ended.');
  const duration = new Histogram({
    name: `${p}job_duration_seconds`,
    help: 'Handler run time in this process, by outcome (success, error, delayed, rate_limited).',
    labelNames: [...labelNames, 'outcome'],
    buckets: options.durationBuckets ?? DEFAULT_BUCKETS,
    registers,
  });
  const wait = new Histogram({
    name: `${p}job_wait_seconds`,
    help: 'Time from a job added to its first attempt started (Redis time), jobs of this process.',
    labelNames: ['queue'],
    buckets: options.waitBuckets ?? WAIT_BUCKETS,
    registers,
  });
  const detach = new Map<Worker, () => void>();

  const metrics: QueueMetrics = {
    addWorker(worker) {
      if (detach.has(worker)) return;
      const queue = { queue: worker.queue.name };
      const labels = (job: { group?: string | undefined }) =>
        byGroup ? { ...queue, group: job.group ?? '' } : queue;
      const on = {
        completed: (job: Job) => completed.inc(labels(job)),
        failed: (job: Job) => failed.inc(labels(job)),
        retried: (job: Job) => retried.inc(labels(job)),
        dead: (job: Job) => dead.inc(labels(job)),
        leaseLost: (job: Job) => lost.inc(labels(job)),
      };
      for (const [event, fn] of Object.entries(on)) worker.on(event as keyof typeof on, fn);
      const removeHook = worker.useRunHook({
        async aroundRun(job, run) {
          // (0: a time not known, e.g. a job added by an older version.)
          if (job.attempt === 1 && job.addedAt > 0 && job.startedAt > 0)
            wait.observe(queue, Math.max(0, job.startedAt - job.addedAt) / 1000);
          const end = duration.startTimer(labels(job));
          try {
            const result = await run();
            end({ outcome: 'success' });
            return result;
          } catch (e) {
            // A DelayedError or RateLimitError is a step, not a failure.
            end({ outcome: stepOf(e) ?? 'error' });
            throw e;
          }
        },
      });
      detach.set(worker, () => {
        for (const [event, fn] of Object.entries(on)) worker.off(event as keyof typeof on, fn);
        removeHook();
      });
    },
    refresh() {
      for (const w of listOf(options.workers)) metrics.addWorker(w);
    },
    close() {
      for (const d of detach.values()) d();
      detach.clear();
      for (const name of NAMES) registry.removeSingleMetric(`${p}${name}`);
    },
  };
  metrics.refresh();
  return metrics;
}
