/**
 * The options each library is driven with, and how the benchmark describes them. Kept apart
 * from the adapters so that the orchestrator can print them without loading the libraries.
 */
import type { JobsOptions, WorkerOptions } from 'bullmq';
import type BeeQueue from 'bee-queue';
import type { WorkQueueOptions } from '../../../lib/index.js';
import type { LibDescription, LibName } from './types.js';
import { ownVersion, packageVersion } from './version.js';

// ---------------------------------------------------------------------------------- ours

/**
 * Queue options: the defaults but `keepCompleted: false` (completed jobs removed, as the other
 * libraries are driven), except in the keep row (`keep`: the default, the newest 1 000 kept for
 * a day); for the mixed workload, one immediate retry.
 */
export function oursQueueOptions(retries: boolean, keep = false): WorkQueueOptions {
  // BENCH_EVENTS=off measures the queue without its event log (the cost of events).
  const o: WorkQueueOptions = process.env.BENCH_EVENTS === 'off' ? { events: false } : {};
  if (!keep) o.keepCompleted = false;
  return retries ? { ...o, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 0 } } : o;
}

// -------------------------------------------------------------------------------- BullMQ

export const BULLMQ_JOB_NAME = 'j';

/** Per-job options: none, except for the mixed workload (one immediate retry). */
export function bullmqJobOptions(retries: boolean): JobsOptions | undefined {
  return retries ? { attempts: 2, backoff: { type: 'fixed', delay: 0 } } : undefined;
}

/**
 * Worker options besides connection and concurrency. Completed jobs are removed at once and
 * failed ones capped at 10 000 (like ours' dead-letter set). Set on the Worker, not per job,
 * so that the option is not stored in every job hash.
 */
export const BULLMQ_WORKER_OPTIONS = {
  autorun: true,
  removeOnComplete: { count: 0 },
  removeOnFail: { count: 10_000 },
} satisfies Partial<WorkerOptions>;

/** The keep row: the newest 1 000 completed jobs kept for a day, as ours keeps by default. */
export const BULLMQ_KEEP_OPTIONS = {
  ...BULLMQ_WORKER_OPTIONS,
  removeOnComplete: { count: 1000, age: 86_400 },
} satisfies Partial<WorkerOptions>;

// ----------------------------------------------------------------------------- Bee-Queue

/** Settings of a producer queue: no worker, no events, no local job map. */
export const BEE_PRODUCER_SETTINGS = {
  isWorker: false,
  getEvents: false,
  sendEvents: false,
  storeJobs: false,
} satisfies BeeQueue.QueueSettings;

/** Settings of a worker queue: succeeded jobs removed, failed ones kept (no cap exists). */
export const BEE_WORKER_SETTINGS = {
  isWorker: true,
  getEvents: false,
  sendEvents: false,
  storeJobs: false,
  removeOnSuccess: true,
  removeOnFailure: false,
} satisfies BeeQueue.QueueSettings;

// ------------------------------------------------------------------------------ describe

const near = (pkg: string, name: string) => {
  try {
    return packageVersion(name, import.meta.resolve(pkg));
  } catch {
    return '?';
  }
};

export function describeLib(lib: LibName): LibDescription {
  switch (lib) {
    case 'ours':
      return {
        lib,
        label: 'ours',
        versions: {
          'nestjs-work-queue': ownVersion(),
          ioredis: packageVersion('ioredis', new URL('../../../lib/', import.meta.url).href),
        },
        options: {
          connection:
            'one ioredis client (library defaults) per producer and per worker; the Worker opens 1 more (blocking wait), shares one notice connection with the workers of the process whose clients have the same options, and a heartbeat thread with its own',
          queue:
            'new WorkQueue(client, name, { keepCompleted: false }), else defaults (json codec, no stored results, leaseMs 30000, maxDead 10000); the keep row: the default keepCompleted (the newest 1000 completed jobs kept for a day)',
          worker: 'new Worker(queue, handler, { concurrency }) (autostart)',
          add: 'queue.add(data)',
          addBulk: 'queue.addBulk(jobs) (scripts of 2000 jobs, pipelined)',
          mixed: `queue options ${JSON.stringify(oursQueueOptions(true))}; the handler throws`,
        },
      };
    case 'bullmq':
      return {
        lib,
        label: 'BullMQ',
        versions: { bullmq: packageVersion('bullmq'), ioredis: near('bullmq', 'ioredis') },
        options: {
          connection:
            '{ host, port } per Queue and per Worker (BullMQ creates and tunes its own ioredis clients)',
          queue:
            'new Queue(name, { connection }) (defaults: events stream maxLen ~10000, no defaultJobOptions); no QueueEvents',
          worker: `new Worker(name, processor, { connection, concurrency, ${JSON.stringify(BULLMQ_WORKER_OPTIONS).slice(1, -1)} }): removeOnComplete { count: 0 } is removeOnComplete: true, set once on the Worker instead of stored in every job (the keep row: ${JSON.stringify(BULLMQ_KEEP_OPTIONS.removeOnComplete)}); other options default (drainDelay 5 s, lockDuration 30 s, stalled checks on)`,
          add: `queue.add('${BULLMQ_JOB_NAME}', data)`,
          addBulk: `queue.addBulk([{ name: '${BULLMQ_JOB_NAME}', data }, ...])`,
          mixed: `job options ${JSON.stringify(bullmqJobOptions(true))}; the processor throws`,
        },
      };
    case 'bee':
      return {
        lib,
        label: 'Bee-Queue',
        versions: { 'bee-queue': packageVersion('bee-queue'), redis: near('bee-queue', 'redis') },
        options: {
          connection:
            '{ host, port } per queue object (Bee-Queue creates its own node_redis clients)',
          producer: `new Queue(name, ${JSON.stringify(BEE_PRODUCER_SETTINGS)})`,
          worker: `new Queue(name, ${JSON.stringify(BEE_WORKER_SETTINGS)}).process(concurrency, handler); other settings default (stallInterval 5 s, activateDelayedJobs false)`,
          add: 'queue.createJob(data).save()',
          addBulk: 'queue.saveAll(jobs)',
          mixed: 'createJob(data).retries(1) (backoff: immediate); the handler throws',
        },
      };
    case 'bare':
      return {
        lib,
        label: 'bare list (floor)',
        versions: {
          ioredis: packageVersion('ioredis', new URL('../../../lib/', import.meta.url).href),
        },
        options: {
          what: 'test/bench/libs/bare.ts: the least Redis allows for a list queue; not a usable queue (no ids, leases, acks or retries)',
          add: 'LPUSH list json (addBulk: one LPUSH of all)',
          worker:
            'concurrency loops, each LMOVE list → list:taken (taken jobs never removed); when empty one BLMOVE on a 2nd connection',
          mixed: 'not measured (no retries)',
        },
      };
    case 'fused':
      return {
        lib,
        label: 'fused Lua list (floor)',
        versions: {
          ioredis: packageVersion('ioredis', new URL('../../../lib/', import.meta.url).href),
        },
        options: {
          what: 'test/bench/libs/fused.ts: a minimal version of ours; a job is one list entry "<id> <json>" (payload inline)',
          add: 'one script per call: INCRBY ids, RPUSH entries',
          worker:
            'one script call at a time: HDEL the finished ids from the leased hash, LPOP count = free slots, HSET them into the leased hash; idle: BLPOP + HSET',
          drain: 'the same script, bulkSize per call',
          mixed: 'not measured (no retries)',
        },
      };
  }
}
