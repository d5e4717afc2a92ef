/**
 * The metrics integration's scrape-time reads: a queue whose counts cannot be read (Redis down)
 * is counted in `work_queue_scrape_errors_total` by the scrape that failed, not the next one.
 */
import { describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { WorkQueue } from '../../../lib/index.js';
import { registerQueueMetrics } from '../../../src/metrics/index.js';
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
