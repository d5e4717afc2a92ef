import { Queue, Worker } from 'bullmq';
import {
  BULLMQ_JOB_NAME,
  BULLMQ_KEEP_OPTIONS,
  BULLMQ_WORKER_OPTIONS,
  bullmqJobOptions,
} from './settings.js';
import type {
  Adapter,
  AdapterConfig,
  ConsumeOptions,
  Consumer,
  JobData,
  Producer,
} from './types.js';

export function create(config: AdapterConfig): Adapter {
  const connection = { host: config.host, port: config.port };
  const opts = bullmqJobOptions(config.retries);
  return {
    lib: 'bullmq',
    async producer(name: string): Promise<Producer> {
      const queue = new Queue<JobData>(name, { connection });
      queue.on('error', (e) => process.stderr.write(`[bullmq queue] ${String(e)}\n`));
      return {
        ready: () => queue.waitUntilReady(),
        add: async (data) => {
          await queue.add(BULLMQ_JOB_NAME, data, opts);
        },
        addBulk: async (data) => {
          await queue.addBulk(data.map((d) => ({ name: BULLMQ_JOB_NAME, data: d, opts })));
        },
        close: () => queue.close(),
      };
    },
    async consumer(name: string, o: ConsumeOptions): Promise<Consumer> {
      const worker = new Worker<JobData, void>(
        name,
        async (job) => {
          await o.handler(job.data, job.attemptsMade === 0);
        },
        {
          connection,
          concurrency: o.concurrency,
          ...(config.keepCompleted ? BULLMQ_KEEP_OPTIONS : BULLMQ_WORKER_OPTIONS),
        },
      );
      worker.on('completed', () => o.onCompleted());
      worker.on('failed', () => o.onFailed?.());
      worker.on('error', (e) => o.onError(e));
      return { close: () => worker.close() };
    },
  };
}
