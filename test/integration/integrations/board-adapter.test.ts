/**
 * The bull-board adapter (issue 18) through the board's real HTTP API (@bull-board/express, with
 * response validation on): counts, paged listings, the job view, and every action against Redis.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { FlowProducer, type WorkQueue } from '../../../lib/index.js';
import { WorkQueueAdapter } from '../../../src/bull-board/index.js';
import { board, listed } from '../../support/board.js';
import { QueueFixture } from '../../support/queue.js';
import { waitFor } from '../../support/wait.js';
import { workersClosedAfterEach } from '../../support/worker.js';

const fx = new QueueFixture();
afterAll(() => fx.cleanup());
const worker = workersClosedAfterEach((e) => console.error('worker error', e));

/** Makes job `id` dead (one attempt, failed with `message`). */
async function killed(q: WorkQueue, data: unknown, message: string): Promise<string> {
  const { id } = await q.add(data, { name: 'doomed', maxAttempts: 1 });
  const [lease] = await q.lease({ count: 1 });
  expect(await q.fail(lease!, new Error(message))).toBe('dead');
  return id;
}

describe('WorkQueueAdapter on the board', () => {
  let q: WorkQueue;
  let http: ReturnType<typeof board>;
  beforeAll(() => {
    q = fx.queue();
    http = board(q);
  });

  it('maps counts: pending→waiting, leased→active, delayed, dead→failed, completed', async () => {
    const deadId = await killed(q, { n: 0 }, 'boom');
    await q.add({ n: 1 }, { name: 'running' });
    await q.lease({ count: 1 });
    await q.addBulk([{ data: { n: 2 } }, { data: { n: 3 }, opts: { priority: 1 } }]);
    await q.add({ n: 4 }, { delayMs: 60_000 });
    const view = await listed(http, q);
    expect(view.counts).toMatchObject({
      waiting: 2,
      active: 1,
      delayed: 1,
      failed: 1,
      completed: 0,
    });
    expect(view.statuses).toEqual([
      'latest',
      'active',
      'waiting',
      'delayed',
      'failed',
      'completed',
      'waiting-children',
    ]);
    const failed = await listed(http, q, 'failed');
    expect(failed.jobs.map((j) => [j.id, j.name, j.data, j.attempts, j.failedReason])).toEqual([
      [deadId, 'doomed', { n: 0 }, 1, 'boom'],
    ]);
    // The job view: error, data, state.
    const one = await http.get(`/board/api/queues/${q.name}/${deadId}`).expect(200);
    expect(one.body).toMatchObject({ status: 'failed', job: { id: deadId, data: { n: 0 } } });
    expect(JSON.stringify(one.body.job)).toContain('boom');
    // Its reason is its error: shown once, not again as the "stack trace".
    expect(one.body.job).toMatchObject({ failedReason: 'boom', stacktrace: [] });
  });

  it('flows and groups: waiting-children tab, the parent of a child, the group of a job', async () => {
    const parents = fx.queue();
    const kids = fx.queue({ prefix: parents.options.prefix });
    const h = board(parents, kids);
    const tree = await new FlowProducer(parents.client, {
      prefix: parents.options.prefix,
      logger: false,
    }).add({
      queue: parents.name,
      data: 'p',
      children: [{ queue: kids.name, data: 'k', id: 'kid', group: 'tenant-7' }],
    });
    const view = await listed(h, parents, 'waiting-children');
    expect(view.counts['waiting-children']).toBe(1);
    expect(view.jobs.map((j) => j.id)).toEqual([tree.job.id]);
    const kid = await h.get(`/board/api/queues/${kids.name}/kid`).expect(200);
    expect(kid.body.job).toMatchObject({
      groupId: 'tenant-7',
      opts: {
        group: { id: 'tenant-7' },
        parent: { id: tree.job.id, queue: `${parents.options.prefix}:${parents.name}` },
      },
    });
    const parent = await h.get(`/board/api/queues/${parents.name}/${tree.job.id}`).expect(200);
    expect(parent.body.job.opts.children).toEqual({
      pending: 1,
      completed: 0,
      failed: 0,
      cancelled: 0,
    });
    // The flow view finds the root through the child's parent; no tree is drawn (no producer).
    const flow = await h.get(`/board/api/queues/${kids.name}/kid/flow`).expect(200);
    expect(flow.body).toEqual({ nodeId: 'kid', flowRoot: null, isFlowNode: false });
  });

  it('pages a status; a page past the end and an unknown status are empty, not errors', async () => {
    const p = fx.queue<number>();
    const h = board(p as WorkQueue);
    await p.addBulk(Array.from({ length: 25 }, (_, i) => ({ data: i })));
    const second = await listed(h, p as WorkQueue, 'waiting', 2, 10);
    expect(second.pagination.pageCount).toBe(3);
    expect(second.jobs.map((j) => j.data)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect((await listed(h, p as WorkQueue, 'waiting', 9, 10)).jobs).toEqual([]);
    const adapter = new WorkQueueAdapter(p);
    expect(await adapter.getJobs(['completed', 'nonsense' as 'failed'], 0, 9)).toEqual([]);
    expect(await adapter.getJobLogs('no-such-job')).toEqual([]);
    expect(await adapter.getJobs(['waiting'], 500, 509)).toEqual([]);
    expect(await adapter.getJobs(['waiting'], 5, 2)).toEqual([]);
    expect(await adapter.getJob('')).toBeNull();
    expect(await adapter.getJob('no-such-job')).toBeNull();
    await h.get(`/board/api/queues/${p.name}/no-such-job`).expect(404);
  });

  it('Retry on a dead job requeues it and a worker runs it', async () => {
    const r = fx.queue<{ n: number }>();
    const h = board(r as WorkQueue);
    const id = await killed(r as WorkQueue, { n: 7 }, 'first try failed');
    await h.put(`/board/api/queues/${r.name}/${id}/retry`).expect(204);
    expect((await r.getJob(id))?.state).toBe('pending');
    const ran: number[] = [];
    await worker(r, async (job) => void ran.push(job.data.n)).start();
    await waitFor(() => ran.length === 1, { what: 'retried job ran' });
    expect(ran).toEqual([7]);
    // Retrying a job that is not dead is refused with the board's 400.
    const { id: live } = await r.add({ n: 8 }, { delayMs: 60_000 });
    await h.put(`/board/api/queues/${r.name}/${live}/retry`).expect(400);
  });

  it('promote, remove, retry all, clean, empty, pause/resume, add', async () => {
    const a = fx.queue();
    const h = board(a);
    const base = `/board/api/queues/${a.name}`;
    const { id: later } = await a.add('later', { delayMs: 60_000 });
    await h.put(`${base}/${later}/promote`).expect(204);
    expect((await a.getJob(later))?.state).toBe('pending');
    await h.put(`${base}/${later}/clean`).expect(204);
    expect(await a.getJob(later)).toBeNull();
    // Clean of a kept completed job removes it too.
    const { id: done } = await a.add('done');
    const [lease] = await a.lease();
    await a.complete(lease!);
    expect((await a.getJob(done))?.state).toBe('completed');
    await h.put(`${base}/${done}/clean`).expect(204);
    expect(await a.getJob(done)).toBeNull();

    await killed(a, 1, 'x');
    await killed(a, 2, 'y');
    const all = await h.put(`${base}/retry/failed`).expect(200);
    expect(all.body).toEqual({ retried: 2, skipped: 0 });
    expect((await a.counts()).pending).toBe(2);
    await a.drain();

    await a.addBulk([
      { data: 'd1', opts: { delayMs: 60_000 } },
      { data: 'd2', opts: { delayMs: 60_000 } },
    ]);
    await h.put(`${base}/promote`).expect(200);
    expect((await a.counts()).pending).toBe(2);
    await h.put(`${base}/clean/wait`).expect(200);
    expect((await a.counts()).pending).toBe(0);
    // The board's own name of the status ('waiting': it was refused, only BullMQ's 'wait' drained).
    await a.add('w1');
    await h.put(`${base}/clean/waiting`).expect(200);
    expect((await a.counts()).pending).toBe(0);
    await a.add('d3', { delayMs: 60_000 });
    await h.put(`${base}/clean/delayed`).expect(200);
    await killed(a, 3, 'z');
    await h.put(`${base}/clean/failed`).expect(200);
    expect(await a.counts()).toMatchObject({ pending: 0, delayed: 0, dead: 0 });
    // Running jobs cannot be cleaned in bulk: an error, not a silent success.
    await h.put(`${base}/clean/active`).expect(500);

    await a.addBulk([{ data: 'e1' }, { data: 'e2', opts: { delayMs: 60_000 } }]);
    await h.put(`${base}/empty`).expect(200);
    expect(await a.counts()).toMatchObject({ pending: 0, delayed: 0 });

    await h.put(`${base}/pause`).expect(200);
    expect(await a.isPaused()).toBe(true);
    expect((await listed(h, a)).isPaused).toBe(true);
    await h.put(`${base}/resume`).expect(200);
    expect(await a.isPaused()).toBe(false);

    const added = await h
      .post(`${base}/add`)
      .send({ name: 'from-board', data: { hello: 'board' }, options: { delay: 60_000 } })
      .expect(200);
    expect(added.body.status).toBe('delayed');
    const [job] = await a.getJobs('delayed');
    expect(job).toMatchObject({ name: 'from-board', data: { hello: 'board' } });
    // Priority, a caller id and a group are honoured; what a job only shows is left out; any
    // other option is refused, not dropped.
    await h
      .post(`${base}/add`)
      .send({
        name: 'x',
        data: 1,
        options: { priority: 1, jobId: 'custom-1', group: { id: 'tenant-a' }, deadReason: 'old' },
      })
      .expect(200);
    expect(await a.getJob('custom-1')).toMatchObject({ priority: 1, group: 'tenant-a' });
    await h
      .post(`${base}/add`)
      .send({ name: 'y', data: 2, options: { lifo: true } })
      .expect(500);
    expect((await a.counts()).pending).toBe(1);
  });

  it("Obliterate while a worker lives: the board's 409 (active jobs, force gets past); forced: gone", async () => {
    // (The refusal was a bare 500.)
    const o = fx.queue();
    const h = board(o);
    const base = `/board/api/queues/${o.name}`;
    const w = worker(o, () => undefined);
    await w.start();
    await o.add('x', { delayMs: 60_000 });
    await h.put(`${base}/pause`).expect(200);
    const refused = await h.put(`${base}/obliterate`).expect(409);
    expect(JSON.stringify(refused.body)).toContain('QUEUE_HAS_ACTIVE_JOBS');
    expect((await o.counts()).delayed).toBe(1);
    await h.put(`${base}/obliterate`).send({ force: true }).expect(200);
    expect((await o.counts()).delayed).toBe(0);
  });

  it("Add job: every bad option refused at once; the form's __default__ is no name; progress; stats bounded", async () => {
    const u = fx.queue();
    const h = board(u);
    const base = `/board/api/queues/${u.name}`;
    // (A negative delay and attempts were dropped, the job added with the defaults.)
    const bad = await h
      .post(`${base}/add`)
      .send({ name: 'c', data: 1, options: { priority: 12, delay: -5, attempts: -1 } });
    expect(bad.status).toBe(500);
    for (const option of ['priority', 'delayMs', 'maxAttempts'])
      expect(JSON.stringify(bad.body)).toContain(option);
    expect((await u.counts()).pending).toBe(0);
    await h.post(`${base}/add`).send({ name: '__default__', data: 2, options: {} }).expect(200);
    const [job] = await u.getJobs('pending');
    expect(job).toMatchObject({ data: 2 });
    expect(job!.name).toBeUndefined();
    // Progress: a fraction as our docs write it, a percentage as BullMQ's (job.progress(50)).
    const [lease] = await u.lease();
    const adapter = new WorkQueueAdapter(u);
    for (const [value, shown] of [
      [0.5, 50],
      [50, 50],
    ] as const) {
      await u.progress(lease!, value);
      expect((await adapter.getJob(lease!.id))!.toJSON().progress).toBe(shown);
    }
    // The Redis stats of a Redis that does not answer: REDIS_UNAVAILABLE within commandTimeoutMs.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as net.AddressInfo).port;
    const mute = new Redis(port, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: null });
    mute.on('error', () => undefined);
    try {
      const q = fx.queue({ commandTimeoutMs: 300 }, mute);
      await expect(new WorkQueueAdapter(q).getRedisInfo()).rejects.toMatchObject({
        code: 'REDIS_UNAVAILABLE',
      });
    } finally {
      mute.disconnect();
      silent.close();
    }
  });

  it('refuses what the queue cannot do, with an error the board shows', async () => {
    const u = fx.queue();
    const h = board(u);
    const base = `/board/api/queues/${u.name}`;
    const { id } = await u.add({ a: 1 }, { delayMs: 60_000 });
    await h.patch(`${base}/${id}/priority`).send({ priority: 3 }).expect(200);
    expect((await u.getJob(id))?.priority).toBe(3);
    // A running job's data: BAD_STATE, shown as an error; nothing changed.
    await u.add({ b: 1 }, { id: 'running' });
    await u.lease({ count: 1 });
    const upd = await h.patch(`${base}/running/update-data`).send({ jobData: { b: 2 } });
    expect(upd.status).toBe(500);
    expect(JSON.stringify(upd.body)).toContain('leased');
    expect((await u.getJob('running'))?.data).toEqual({ b: 1 });
    // Rescheduling is for delayed jobs only (the board checks the state).
    await h.patch(`${base}/running/delay`).send({ runAt: Date.now() }).expect(400);
    const adapter = new WorkQueueAdapter(u);
    await expect(adapter.clean('active')).rejects.toThrow('does not support');
    await expect(adapter.releaseActiveRateLimit()).rejects.toThrow('does not support');
  });
});
