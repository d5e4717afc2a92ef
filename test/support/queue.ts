import { Redis } from 'ioredis';
import { WorkQueue } from '../../lib/index.js';
import type { WorkQueueOptions } from '../../lib/index.js';
import { deleteKeys, keysMatching, testRedisUrl, uniqueName, type ScanClient } from './keys.js';

/**
 * Queues for one test file: each gets a random name and prefix on the shared Redis, and
 * `cleanup()` removes their keys and closes the clients.
 */
export class QueueFixture {
  private readonly clients: Redis[] = [];
  private readonly prefixes: string[] = [];

  /** A fresh client to the shared test Redis (closed by cleanup). */
  client(): Redis {
    const c = new Redis(testRedisUrl(), { maxRetriesPerRequest: 3 });
    this.clients.push(c);
    return c;
  }

  queue<T = unknown, R = unknown>(
    options: WorkQueueOptions = {},
    client = this.client(),
  ): WorkQueue<T, R> {
    const prefix = options.prefix ?? uniqueName('t');
    this.prefixes.push(prefix);
    return new WorkQueue<T, R>(client, uniqueName(), { logger: false, ...options, prefix });
  }

  async cleanup(): Promise<void> {
    // A client of our own only when needed, and closed below like the others.
    if (this.prefixes.length > 0 && this.clients.length === 0) this.client();
    const c = this.clients[0];
    if (c) for (const p of this.prefixes) await deleteKeys(c, `${p}:*`);
    await Promise.all(this.clients.map((x) => x.quit().catch(() => x.disconnect())));
    this.clients.length = 0;
    this.prefixes.length = 0;
  }
}

/**
 * The keys of queue `q` but its counters (job ids, lease tokens, worker ids), which obliterate()
 * keeps: after it, none.
 */
export async function keysButCounters(
  client: ScanClient,
  q: Pick<WorkQueue<unknown, unknown>, 'keys'>,
): Promise<string[]> {
  const counters = new Set(
    (['seqCounter', 'tokenCounter', 'workerIdCounter'] as const).map((k) => q.keys.key(k)),
  );
  return (await keysMatching(client, `${q.keys.base}*`)).filter((k) => !counters.has(k));
}
