/**
 * The metrics integration's scrape-time reads: a queue whose counts cannot be read (Redis down)
 * is counted in `work_queue_scrape_errors_total` by the scrape that failed, not the next one.
 */
import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { Test } from '@nestjs/testing';
import { WorkQueue, WorkQueueError } from '../../../lib/index.js';
import { WorkQueueModule } from '../../../src/index.js';
import { registerQueueMetrics, WorkQueueMetricsModule } from '../../../src/metrics/index.js';
import { testRedisUrl } from '../../support/keys.js';
import { offlineClient } from '../../support/core.js';
import { parseMetrics } from '../../support/prometheus.js';

describe('scrape errors', () => {
  it('a scrape that cannot read a queue counts itself', async () => {
    const client = await offlineClient();
    const q = new WorkQueue(client, 'unreadable', { logger: false, commandTimeoutMs: 300 });
    const registry = new Registry();
    const metrics = registerQueueMetrics(registry, { queues: [q] });
    try {
      const errors = async () =>
        parseMetrics(await registry.metrics())
          .filter((s) => s.name === 'work_queue_scrape_errors_total')
          .map((s) => [s.labels.queue, s.value]);
      expect(await errors()).toEqual([['unreadable', 1]]);
      expect(await errors()).toEqual([['unreadable', 2]]);
    } finally {
      metrics.close();
      client.disconnect();
    }
  });
});

describe('bad metrics options', () => {
  it('registerQueueMetrics lists every problem at once and registers nothing', () => {
    const registry = new Registry();
    let err: WorkQueueError | undefined;
    try {
      registerQueueMetrics(registry, {
        queues: 5,
        workers: [{}],
        prefix: 5,
        durationBuckets: 'x',
        waitBuckets: [5, 1],
        groupLabel: 'yes',
        unknownOpt: 1,
      } as never);
    } catch (e) {
      err = e as WorkQueueError;
    }
    expect(err).toBeInstanceOf(WorkQueueError);
    expect(err!.code).toBe('INVALID_OPTIONS');
    expect(err!.problems).toEqual([
      'unknown option "unknownOpt" (known: queues, workers, prefix, durationBuckets, groupLabel, waitBuckets)',
      'prefix must be a Prometheus metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*), got 5',
      'durationBuckets must be increasing positive numbers (seconds), got "x"',
      'waitBuckets must be increasing positive numbers (seconds), got [5,1]',
      'groupLabel must be a boolean, got "yes"',
      'queues must be an array of WorkQueues or a function giving one, got 5',
      'workers must be an array of Workers or a function giving one, got [{}]',
    ]);
    expect(registry.getMetricsAsArray()).toEqual([]);
    // Nothing left half-registered: good options register on the same registry.
    registerQueueMetrics(registry, {}).close();
  });

  it('WorkQueueMetricsModule: bad options, and a queue that is not registered, fail the bootstrap', async () => {
    const compile = (options: object) =>
      Test.createTestingModule({
        imports: [
          WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, logger: false }),
          WorkQueueModule.registerQueue({ name: 'orders' }),
          WorkQueueMetricsModule.forRoot(options as never),
        ],
      }).compile();
    const bad = await compile({ registry: {}, queues: 'orders' }).catch((e: unknown) => e);
    expect(bad).toMatchObject({ code: 'INVALID_OPTIONS' });
    expect((bad as WorkQueueError).problems).toEqual([
      'queues must be an array of queue names, got "orders"',
      'registry must be a prom-client Registry, got {}',
    ]);
    const ref = await compile({ queues: ['orders', 'typo'] });
    const app = ref.createNestApplication({ logger: false });
    const typo = await app.init().catch((e: unknown) => e);
    await app.close();
    expect(typo).toMatchObject({ code: 'INVALID_OPTIONS' });
    expect((typo as WorkQueueError).problems).toEqual([
      'queues: queue "typo" is not registered (registered: "orders")',
    ]);
  });
});
