// The app's own ioredis client (ioredis 5 in this app) handed to the package, which takes ioredis
// as a peer: `nest build` type-checks this file against the app's ioredis typings.
import { Redis } from 'ioredis';
import { WorkQueueModule } from 'nestjs-work-queue';
import { Worker, WorkQueue, type Job } from 'nestjs-work-queue/core';

export function ownClient(url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'): Redis {
  return new Redis(url, { maxRetriesPerRequest: 3 });
}

/** The Nest module on a client the app made (the module never closes it). */
export function workQueueOn(client: Redis) {
  return WorkQueueModule.forRoot({ connection: { client }, logger: false });
}

/** The core API on the same client: add a job, have a worker double it, return the result. */
export async function double(client: Redis, prefix: string, n: number): Promise<number> {
  const queue = new WorkQueue<{ n: number }, number>(client, 'doubler', { prefix, logger: false });
  const worker = new Worker(queue, async (job: Job<{ n: number }>) => job.data.n * 2, {
    autostart: false,
  });
  const result = new Promise<number>((resolve) => worker.on('completed', (_job, r) => resolve(r)));
  await worker.start();
  try {
    await queue.add({ n });
    return await result;
  } finally {
    await worker.close();
  }
}
