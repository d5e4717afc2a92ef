import BeeQueue from 'bee-queue';
import { BEE_PRODUCER_SETTINGS, BEE_WORKER_SETTINGS } from './settings.js';
import type {
  Adapter,
  AdapterConfig,
  ConsumeOptions,
  Consumer,
  JobData,
  Producer,
} from './types.js';

export function create(config: AdapterConfig): Adapter {
  const redis = { host: config.host, port: config.port };
  const job = (queue: BeeQueue<JobData>, data: JobData) => {
    const j = queue.createJob(data);
    return config.retries ? j.retries(1) : j;
  };
  const retriesAtFirst = config.retries ? 1 : 0;
  return {
    lib: 'bee',
    async producer(name: string): Promise<Producer> {
      const queue = new BeeQueue<JobData>(name, { redis, ...BEE_PRODUCER_SETTINGS });
      queue.on('error', (e) => process.stderr.write(`[bee producer] ${String(e)}\n`));
      return {
        ready: async () => {
          await queue.ready();
        },
        add: async (data) => {
          await job(queue, data).save();
        },
        addBulk: async (data) => {
          const errors = await queue.saveAll(data.map((d) => job(queue, d)));
          if (errors.size > 0) {
            const first = errors.values().next().value;
            throw new Error(`saveAll: ${errors.size} job(s) failed: ${String(first)}`);
          }
        },
        close: () => queue.close(),
      };
    },
    async consumer(name: string, o: ConsumeOptions): Promise<Consumer> {
      const queue = new BeeQueue<JobData>(name, { redis, ...BEE_WORKER_SETTINGS });
      queue.on('succeeded', () => o.onCompleted());
      queue.on('failed', () => o.onFailed?.());
      queue.on('error', (e) => o.onError(e));
      queue.process(o.concurrency, async (j: BeeQueue.Job<JobData>) => {
        const { retries } = j.options as { retries?: number };
        await o.handler(j.data, (retries ?? 0) >= retriesAtFirst);
      });
      return { close: () => queue.close() };
    },
  };
}
