/**
 * Flows for one test file: a prefix of its own on the shared Redis, a FlowProducer, queues of that
 * prefix by name, and workers; `cleanup()` closes the workers, removes the keys, closes clients.
 */
import type { Redis } from 'ioredis';
import { FlowProducer, WorkQueue, Worker } from '../../lib/index.js';
import type {
  FlowProducerOptions,
  Handler,
  WorkerOptions,
  WorkQueueOptions,
} from '../../lib/index.js';
import { QueueFixture } from './queue.js';
import { uniqueName } from './keys.js';

export class FlowFixture {
  private readonly fx = new QueueFixture();
  private readonly workers: Worker<never, never>[] = [];
  private readonly queues = new Map<string, WorkQueue<never, never>>();
  readonly prefix: string;
  readonly client: Redis;

  constructor(readonly queueOptions: WorkQueueOptions = {}) {
    this.client = this.fx.client();
    // The fixture's prefix list cleans the keys: register ours through one queue.
    this.prefix = this.fx.queue({ prefix: uniqueName('fl') }, this.client).options.prefix;
  }

  producer(options: FlowProducerOptions = {}): FlowProducer {
    return new FlowProducer(this.client, { logger: false, prefix: this.prefix, ...options });
  }

  /** The queue `name` of this fixture's prefix (one object per name). */
  queue<T = unknown, R = unknown>(name: string, options: WorkQueueOptions = {}): WorkQueue<T, R> {
    let q = this.queues.get(name);
    if (!q) {
      const o = { logger: false as const, ...this.queueOptions, ...options, prefix: this.prefix };
      q = new WorkQueue<never, never>(this.client, name, o);
      this.queues.set(name, q);
    }
    return q as unknown as WorkQueue<T, R>;
  }

  worker<T, R>(name: string, h: Handler<T, R>, o: WorkerOptions = {}): Worker<T, R> {
    const w = new Worker(this.queue<T, R>(name), h, { concurrency: 4, ...o });
    w.on('error', (e) => console.error(`worker of ${name}:`, e));
    this.workers.push(w as unknown as Worker<never, never>);
    return w;
  }

  async closeWorkers(): Promise<void> {
    await Promise.all(this.workers.splice(0).map((w) => w.close({ timeoutMs: 0 })));
  }

  async cleanup(): Promise<void> {
    await this.closeWorkers();
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await this.fx.cleanup();
  }
}
