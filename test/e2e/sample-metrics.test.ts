// The sample's GET /metrics (nestjs-work-queue/metrics): gauges equal the queue's counts() and
// paused state at scrape time; counters and durations move as its processor completes and fails jobs.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createApp } from '../../sample/main.js';
import { EMAILS } from '../../sample/emails.js';
import { getQueueToken, type WorkQueue } from '../../src/index.js';
import { uniqueName } from '../support/keys.js';
import { parseMetrics, sampleValue, type Sample } from '../support/prometheus.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

let redis: RedisHandle;
let app: INestApplication;
let queue: WorkQueue;
const http = () => request(app.getHttpServer());
const queueLabel = { queue: EMAILS };

async function scrape(): Promise<Sample[]> {
  const res = await http().get('/metrics').expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return parseMetrics(res.text);
}

const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  sampleValue(samples, name, { ...queueLabel, ...labels }) ?? 0;

async function jobState(id: string): Promise<unknown> {
  return ((await http().get(`/jobs/${id}`).expect(200)).body as { state: unknown }).state;
}

beforeAll(async () => {
  redis = await startRedis();
  app = await createApp(redis.url, uniqueName('sample'), false);
  await app.init();
  queue = app.get<WorkQueue>(getQueueToken(EMAILS));
});

afterAll(async () => {
  await app?.close();
  await redis?.dispose();
});

describe('sample GET /metrics', () => {
  it('counts a job completed before the first scrape', async () => {
    await http()
      .post('/jobs')
      .send({ name: 'welcome', data: { to: 'a@example.com' }, id: 'm-first' })
      .expect(201);
    await waitFor(async () => (await jobState('m-first')) === 'completed');
    const samples = await scrape();
    expect(value(samples, 'work_queue_jobs_completed_total')).toBeGreaterThanOrEqual(1);
    expect(
      value(samples, 'work_queue_job_duration_seconds_count', { outcome: 'success' }),
    ).toBeGreaterThanOrEqual(1);
    // Added → first start, from the job's Redis times.
    expect(value(samples, 'work_queue_job_wait_seconds_count')).toBeGreaterThanOrEqual(1);
  });

  it('GET /jobs/:id shows the times and the log; GET /queues/:name/metrics the last hour', async () => {
    const before = Date.now();
    await http()
      .post('/jobs')
      .send({ name: 'welcome', data: { to: 'h@example.com' }, id: 'm-history' })
      .expect(201);
    await waitFor(async () => (await jobState('m-history')) === 'completed');
    const job = (await http().get('/jobs/m-history').expect(200)).body as Record<string, unknown>;
    expect(job).toMatchObject({
      state: 'completed',
      attemptsMade: 1,
      logs: ['welcome email to ***@example.com'],
      result: { messageId: 'welcome-m-history' },
    });
    const [added, started, finished] = [job.addedAt, job.startedAt, job.finishedAt] as number[];
    expect(added).toBeGreaterThan(before - 60_000);
    expect(started).toBeGreaterThanOrEqual(added!);
    expect(finished).toBeGreaterThanOrEqual(started!);
    expect(typeof job.processedBy).toBe('string');
    const m = (await http().get(`/queues/${EMAILS}/metrics`).expect(200)).body as Record<
      string,
      { perMinute: Array<{ at: number; count: number }>; total: number }
    >;
    expect(m.completed!.total).toBeGreaterThanOrEqual(2);
    expect(m.completed!.perMinute.reduce((a, p) => a + p.count, 0)).toBe(m.completed!.total);
    expect(m.dead).toEqual({ perMinute: [], total: 0 });
    await http().get('/queues/nope/metrics').expect(404);
  });

  it('reports counts() and the paused state as gauges', async () => {
    await queue.addBulk([
      { data: { to: 'x@example.com' }, opts: { name: 'welcome', delayMs: 600_000 } },
      { data: { to: 'y@example.com' }, opts: { name: 'welcome', delayMs: 600_000 } },
    ]);
    await queue.pause();
    // The digest schedule may tick between the scrape and counts(): compare until they agree.
    await waitFor(
      async () => {
        const samples = await scrape();
        const c = await queue.counts();
        const gauges = {
          pending: value(samples, 'work_queue_jobs', { state: 'pending' }),
          delayed: value(samples, 'work_queue_jobs', { state: 'delayed' }),
          leased: value(samples, 'work_queue_jobs', { state: 'leased' }),
          dead: value(samples, 'work_queue_jobs', { state: 'dead' }),
          workers: value(samples, 'work_queue_workers'),
          waitingChildren: value(samples, 'work_queue_jobs', { state: 'waiting-children' }),
          completed: value(samples, 'work_queue_jobs', { state: 'completed' }),
          paused: value(samples, 'work_queue_paused'),
        };
        const expected = {
          pending: c.pending,
          delayed: c.delayed,
          leased: c.leased,
          dead: c.dead,
          workers: c.workers,
          waitingChildren: c.waitingChildren,
          completed: c.completed,
          paused: 1,
        };
        return JSON.stringify(gauges) === JSON.stringify(expected) && c.delayed >= 2;
      },
      { what: 'gauges equal to counts()' },
    );
    await queue.resume();
    await waitFor(async () => value(await scrape(), 'work_queue_paused') === 0 || undefined);
    const samples = await scrape();
    expect(value(samples, 'work_queue_workers')).toBe(1);
    expect(value(samples, 'work_queue_scrape_errors_total')).toBe(0);
  });

  it('moves the failure counters as a job is retried and dead-lettered', async () => {
    const before = await scrape();
    const created = await http()
      .post('/jobs')
      .send({ name: 'digest', data: { to: 'e@example.com', alwaysFail: true } })
      .expect(201);
    const id = (created.body as { id: string }).id;
    await waitFor(async () => (await jobState(id)) === 'dead', { timeoutMs: 10_000 });
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string> = {}) =>
      value(after, name, labels) - value(before, name, labels);
    // maxAttempts 3: two retries, then dead.
    expect(delta('work_queue_jobs_failed_total')).toBe(3);
    expect(delta('work_queue_jobs_retried_total')).toBe(2);
    expect(delta('work_queue_jobs_dead_total')).toBe(1);
    expect(delta('work_queue_job_duration_seconds_count', { outcome: 'error' })).toBe(3);
    expect(value(after, 'work_queue_jobs', { state: 'dead' })).toBeGreaterThanOrEqual(1);
  });
});
