import { Redis } from 'ioredis';
import { Worker, WorkQueue } from '../../../lib/index.js';
import { oursQueueOptions } from './settings.js';
import type {
  Adapter,
  AdapterConfig,
  ConsumeOptions,
  Consumer,
  JobData,
  Producer,
} from './types.js';

export function create(config: AdapterConfig): Adapter {
  const client = () => new Redis({ host: config.host, port: config.port });
  const options = oursQueueOptions(config.retries, config.keepCompleted);
  return {
    lib: 'ours',
    async producer(name: string): Promise<Producer> {
      const redis = client();
      const queue = new WorkQueue<JobData>(redis, name, options);
      return {
        ready: () => queue.ready(),
        add: async (data) => {
          await queue.add(data);
        },
        addBulk: async (data, groupOf, named) => {
          await queue.addBulk(
            groupOf
              ? data.map((d) => ({
                  data: d,
                  opts: named ? { name: groupOf(d) } : { group: groupOf(d) },
                }))
              : data.map((d) => ({ data: d })),
          );
        },
        close: async () => {
          await redis.quit();
        },
      };
    },
    async consumer(name: string, opts: ConsumeOptions): Promise<Consumer> {
      const redis = client();
      const queue = new WorkQueue<JobData, void>(redis, name, options);
      const worker = new Worker<JobData, void>(
        queue,
        (job) => opts.handler(job.data, job.attempt === 1),
        {
          concurrency: opts.concurrency,
          ...(opts.prefetch === undefined ? {} : { prefetch: opts.prefetch }),
        },
      );
      worker.on('completed', () => opts.onCompleted());
      worker.on('failed', () => opts.onFailed?.());
      worker.on('error', (e) => opts.onError(e));
      return {
        close: async () => {
          await worker.close();
          await redis.quit();
        },
      };
    },
    async drain(name: string, batch: number): Promise<number> {
      const redis = client();
      const queue = new WorkQueue<JobData, void>(redis, name, options);
      try {
        await queue.ready();
        let total = 0;
        let jobs = await queue.lease({ count: batch });
        while (jobs.length > 0) {
          const r = await queue.completeAndLease(
            jobs.map((lease) => ({ lease })),
            { count: batch },
          );
          total += r.completed.filter(Boolean).length;
          jobs = r.jobs;
        }
        return total;
      } finally {
        await redis.quit();
      }
    },
  };
}
