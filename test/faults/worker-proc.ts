/**
 * A fault-suite worker process: one core `Worker` per queue on one connection, handlers from
 * handler.ts logging every execution and completion to files (see handler.ts).
 *
 * Run by run.ts: `node --import ./scripts/register-ts.mjs test/faults/worker-proc.ts '<JSON>'`.
 * Sends `{ type: 'ready', workerIds }` over IPC once every worker is registered and leasing;
 * on the IPC message 'close' it closes its workers gracefully and exits 0.
 */
import { Redis } from 'ioredis';
import { errorMessage, WorkQueue, Worker } from '../../lib/index.js';
import type { WorkerOptions, WorkQueueOptions } from '../../lib/index.js';
import { faultHandler, logReconnects, openLog, type FaultJob } from './handler.js';

export interface WorkerProcConfig {
  redisUrl: string;
  prefix: string;
  queues: string[];
  queueOptions: WorkQueueOptions;
  workerOptions: WorkerOptions;
  logDir: string;
}

const config = JSON.parse(process.argv[2] ?? '{}') as WorkerProcConfig;
const log = openLog(config.logDir);

const client = new Redis(config.redisUrl);
client.on('error', () => {
  /* reconnects by itself; failures surface through the worker's 'error' events */
});
logReconnects(log, config.queues.join(','), client);

const workers = config.queues.map((name) => {
  const queue = new WorkQueue<FaultJob>(client, name, {
    ...config.queueOptions,
    prefix: config.prefix,
    logger: false,
  });
  const worker = new Worker(queue, faultHandler(name, log), {
    ...config.workerOptions,
    autostart: false,
  });
  worker.on('completed', (job) => log.done(name, job));
  worker.on('leaseLost', (job, reason) => log.event('L', name, job.id, reason));
  worker.on('failed', (job, error, outcome) =>
    log.event('F', name, job.id, outcome, errorMessage(error)),
  );
  worker.on('error', (e) => log.event('X', name, '-', errorMessage(e)));
  return worker;
});

process.on('message', (m) => {
  if (m !== 'close') return;
  void (async () => {
    await Promise.all(workers.map((w) => w.close({ timeoutMs: 2_000 })));
    await client.quit().catch(() => client.disconnect());
    process.exit(0);
  })();
});

await Promise.all(workers.map((w) => w.start()));
process.send?.({ type: 'ready', workerIds: workers.map((w) => w.workerId) });
