/**
 * The board shows a queue's history (issue 25, docs/history.md) through its real HTTP API: the
 * Completed tab with results and real dates, a job's log, per-minute metrics, the workers, and
 * the actions the core now has (edit data, reschedule, re-run a completed job, clean completed).
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { Worker, type WorkQueue } from '../../../lib/index.js';
import { WorkQueueAdapter } from '../../../src/bull-board/index.js';
import { board, listed } from '../../support/board.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';

const fx = new QueueFixture();
const workers: Worker[] = [];
afterAll(async () => {
  await Promise.all(workers.map((w) => w.close({ timeoutMs: 0 })));
  await fx.cleanup();
});

/** A worker that logs a line per job and returns `done <data>`. */
function start(q: WorkQueue<unknown, unknown>, name?: string): Worker {
  const w = new Worker(
    q,
    async (job) => {
      await job.log(`working on ${JSON.stringify(job.data)}`);
      return `done ${JSON.stringify(job.data)}`;
    },
    { concurrency: 2, ...(name ? { name } : {}) },
  );
  w.on('error', (e) => console.error('worker error', e));
  workers.push(w);
  return w;
}

describe('the board shows the history', () => {
  it('Completed tab: kept jobs with results, real dates and durations; logs; metrics; workers', async () => {
    const q = fx.queue();
    const h = board(q);
    const before = Date.now();
    const { id } = await q.add({ n: 1 }, { name: 'report' });
    start(q, 'reports-worker');
    await waitFor(async () => (await q.getJob(id))?.state === 'completed', { what: 'completed' });

    const view = await listed(h, q, 'completed');
    expect(view.counts.completed).toBe(1);
    expect(view.jobs.map((j) => j.id)).toEqual([id]);
    const one = await h.get(`/board/api/queues/${q.name}/${id}`).expect(200);
    const job = one.body.job as Record<string, unknown>;
    expect(one.body.status).toBe('completed');
    expect(job.returnValue).toBe('done {"n":1}');
    // Real dates (not 1970), in order; the duration is finishedOn - processedOn.
    const [added, started, finished] = [job.timestamp, job.processedOn, job.finishedOn] as number[];
    expect(added).toBeGreaterThanOrEqual(before - 60_000);
    expect(started).toBeGreaterThanOrEqual(added!);
    expect(finished).toBeGreaterThanOrEqual(started!);
    expect(finished).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(typeof job.processedBy).toBe('string');

    const logs = await h.get(`/board/api/queues/${q.name}/${id}/logs`).expect(200);
    expect(logs.body).toEqual(['working on {"n":1}']);

    const metrics = await h.get(`/board/api/queues/${q.name}/metrics`).expect(200);
    expect(JSON.stringify(metrics.body)).toContain('"count":1');
    const adapter = new WorkQueueAdapter(q);
    const asked = Date.now();
    const m = await adapter.getMetrics('completed');
    const answered = Date.now();
    expect(m.meta.count).toBe(1);
    expect(m.data.reduce((a, b) => a + b, 0)).toBe(1);
    // Newest first: its minute is the first, unless a minute began between its completion and
    // this read (then the second).
    const minutesAgo = (t: number) => Math.floor(t / 60_000) - Math.floor(finished! / 60_000);
    expect([minutesAgo(asked), minutesAgo(answered)]).toContain(m.data.indexOf(1));

    const ws = await adapter.getWorkers();
    expect(ws).toHaveLength(1);
    expect(ws[0]).toMatchObject({ name: 'reports-worker', addr: expect.stringContaining('pid') });
    const queues = await h.get('/board/api/queues').query({ activeQueue: q.name }).expect(200);
    const mine = (queues.body.queues as Array<Record<string, unknown>>).find(
      (x) => x.name === q.name,
    );
    expect(mine?.hasWorkers).toBe(true);
  });

  it('edit data and reschedule a delayed job; re-run a completed job; clean completed', async () => {
    const q = fx.queue();
    const h = board(q);
    const base = `/board/api/queues/${q.name}`;
    const { id: later } = await q.add({ v: 1 }, { delayMs: 3_600_000 });
    await h
      .patch(`${base}/${later}/update-data`)
      .send({ jobData: { v: 2 } })
      .expect(200);
    expect((await q.getJob(later))?.data).toEqual({ v: 2 });
    await h
      .patch(`${base}/${later}/delay`)
      .send({ runAt: Date.now() + 120_000 })
      .expect(200);
    const due = (await q.getJob(later))!.at!;
    expect(due).toBeLessThan(Date.now() + 600_000);
    expect(due).toBeGreaterThan(Date.now() + 30_000);

    const { id } = await q.add({ v: 3 });
    start(q);
    await waitFor(async () => (await q.getJob(id))?.state === 'completed', { what: 'completed' });
    await h.put(`${base}/${id}/retry`).expect(204);
    await waitFor(async () => (await q.getJobs('completed', { limit: 10 })).length === 2, {
      what: 'the re-run completed too',
    });
    // Clean completed with a grace time keeps the recent ones; without, all go.
    await h.put(`${base}/clean/completed`).query({ grace: 3_600_000 }).expect(200);
    expect((await q.counts()).completed).toBe(2);
    await new WorkQueueAdapter(q).clean('completed', 0);
    expect((await q.counts()).completed).toBe(0);
  });
});
