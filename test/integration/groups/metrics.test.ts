/**
 * Metrics label by group only when asked (issue 27): `registerQueueMetrics(registry, {
 * groupLabel: true })` adds `group` to the per-process counters and the duration histogram;
 * without it there is no group label (one series per queue, whatever the number of groups).
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Registry } from 'prom-client';
import { registerQueueMetrics } from '../../../src/metrics/index.js';
import { QueueFixture } from '../../support/queue.js';
import { parseMetrics } from '../../support/prometheus.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach();

describe('metrics by group', () => {
  it.each([true, false])('groupLabel %s', async (groupLabel) => {
    const q = fx.queue();
    const registry = new Registry();
    const w = worker(q, async () => undefined, { concurrency: 4 });
    const metrics = registerQueueMetrics(registry, { workers: [w], groupLabel });
    let done = 0;
    w.on('completed', () => done++);
    await q.addBulk([
      { data: 'a', opts: { group: 'A' } },
      { data: 'b', opts: { group: 'A' } },
      { data: 'c', opts: { group: 'B' } },
      { data: 'd' },
    ]);
    await waitFor(() => done === 4, { what: '4 jobs' });
    const completed = parseMetrics(await registry.metrics()).filter(
      (s) => s.name === 'work_queue_jobs_completed_total',
    );
    const series = completed.map((s) => [s.labels.group ?? null, s.value]).sort();
    expect(series).toEqual(
      groupLabel
        ? [
            ['', 1],
            ['A', 2],
            ['B', 1],
          ]
        : [[null, 4]],
    );
    metrics.close();
  });
});
