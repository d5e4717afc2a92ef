import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { EmailEventsListener } from '../../sample/email-events.listener.js';
import { EMAILS } from '../../sample/emails.js';
import { getQueueToken, type WorkQueue } from '../../src/index.js';
import { workersFromEnv } from '../../sample/app.module.js';
import { createApp } from '../../sample/main.js';
import { uniqueName } from '../support/keys.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

// Boots the sample app itself (sample/main.ts → AppModule) on a private Redis and drives every
// endpoint over HTTP.
let redis: RedisHandle;
let app: INestApplication;
const prefix = uniqueName('sample');
const http = () => request(app.getHttpServer());
const getJob = async (id: string) =>
  (await http().get(`/jobs/${id}`).expect(200)).body as Record<string, unknown>;

beforeAll(async () => {
  redis = await startRedis();
  app = await createApp(redis.url, prefix, false);
  await app.init();
});

afterAll(async () => {
  await app?.close();
  await redis?.dispose();
});

describe('sample app', () => {
  it('is healthy', async () => {
    const res = await http().get('/health').expect(200);
    expect(res.body).toMatchObject({ status: 'ok', info: { queues: { status: 'up' } } });
  });

  it('has a readiness and a liveness probe', async () => {
    const ready = await http().get('/health/ready').expect(200);
    expect(ready.body).toMatchObject({
      status: 'ok',
      info: { queues: { status: 'up', queues: { emails: { localWorker: true, workers: 1 } } } },
    });
    const live = await http().get('/health/live').expect(200);
    expect(live.body).toMatchObject({
      status: 'ok',
      info: { queues: { status: 'up', workers: { emails: { state: 'ok' } }, unreachableMs: 0 } },
    });
  });

  it('a web instance (WORKERS=false) adds jobs that a worker instance processes', async () => {
    expect(workersFromEnv('false')).toBe(false);
    expect(workersFromEnv(undefined)).toBe(true);
    expect(workersFromEnv('emails, reports')).toEqual(['emails', 'reports']);
    const web = await createApp(redis.url, prefix, false, { workers: workersFromEnv('false') });
    await web.init();
    try {
      const webHttp = () => request(web.getHttpServer());
      await webHttp()
        .post('/jobs')
        .send({ name: 'welcome', data: { to: 'w@example.com' }, id: 'from-web' })
        .expect(201);
      await waitFor(async () => (await getJob('from-web')).state === 'completed', {
        what: 'the job from the web instance, processed by the worker instance',
      });
      const live = await webHttp().get('/health/live').expect(200);
      expect(live.body.info.queues).toMatchObject({ status: 'up', workers: {} });
      const ready = await webHttp().get('/health/ready').expect(200);
      expect(ready.body.info.queues.queues.emails).toMatchObject({
        localWorker: false,
        workers: 1,
      });
    } finally {
      await web.close();
    }
  });

  it('enqueues, processes, and shows the result; a caller id dedupes', async () => {
    const created = await http()
      .post('/jobs')
      .send({ name: 'welcome', data: { to: 'a@example.com' }, id: 'welcome-a' })
      .expect(201);
    expect(created.body).toEqual({ id: 'welcome-a', added: true });
    const done = await waitFor(async () => {
      const job = await getJob('welcome-a');
      return job.state === 'completed' ? job : undefined;
    });
    expect(done).toMatchObject({ result: { messageId: expect.stringMatching(/^welcome-/) } });
    // Its kept copy purged, its stored result still answers: no logs, not a 500 (getJobLogs
    // is NOT_FOUND for it).
    const emails = app.get<WorkQueue>(getQueueToken(EMAILS));
    expect(await emails.purgeCompleted('welcome-a')).toBe(1);
    expect(await getJob('welcome-a')).toMatchObject({ state: 'completed', logs: [] });
    // Completed: the id is free again (dedupe holds while the job exists).
    const unnamed = await http()
      .post('/jobs')
      .send({ data: { to: 'b@example.com' } })
      .expect(201);
    expect(unnamed.body).toMatchObject({ added: true, id: expect.stringMatching(/^\d+$/) });
  });

  it('dedupes a caller id while the job exists', async () => {
    const body = { name: 'welcome', data: { to: 'c@example.com' }, id: 'later-c', delayMs: 60_000 };
    expect((await http().post('/jobs').send(body).expect(201)).body).toEqual({
      id: 'later-c',
      added: true,
    });
    expect((await http().post('/jobs').send(body).expect(201)).body).toEqual({
      id: 'later-c',
      added: false,
    });
    expect(await getJob('later-c')).toMatchObject({ state: 'delayed', name: 'welcome' });
  });

  it('an email without an address is dead-lettered at once, with the reason', async () => {
    await http()
      .post('/jobs')
      .send({ name: 'welcome', data: { name: 'no address' }, id: 'no-to' })
      .expect(201);
    const dead = await waitFor(async () => {
      const job = await getJob('no-to');
      return job.state === 'dead' && job;
    });
    expect(dead).toMatchObject({
      attemptsMade: 1,
      deadReason: 'data.to must be an email address',
    });
  });

  it('refuses a bad body with every reason', async () => {
    const res = await http()
      .post('/jobs')
      .send({ priority: 12, delayMs: -1, id: '42', name: 7 })
      .expect(400);
    const reasons = (res.body as { message: string[] }).message;
    expect(reasons).toEqual(
      expect.arrayContaining([
        expect.stringContaining('data'),
        expect.stringContaining('priority'),
        expect.stringContaining('delayMs'),
        expect.stringContaining('id'),
        expect.stringContaining('name'),
      ]),
    );
  });

  it('retries a failing digest until it succeeds, with progress', async () => {
    const { body } = await http()
      .post('/jobs')
      .send({ name: 'digest', data: { to: 'd@example.com', failTimes: 1 } })
      .expect(201);
    const id = (body as { id: string }).id;
    const done = await waitFor(async () => {
      const job = await getJob(id);
      return job.state === 'completed' ? job : undefined;
    });
    expect(done).toMatchObject({ result: { messageId: `digest-${id}` } });
  });

  it('dead-letters a job that always fails, lists it, and retries it', async () => {
    const { body } = await http()
      .post('/jobs')
      .send({ name: 'digest', data: { to: 'e@example.com', alwaysFail: true } })
      .expect(201);
    const id = (body as { id: string }).id;
    const dead = await waitFor(
      async () => {
        const list = (await http().get('/dead').expect(200)).body as Array<Record<string, unknown>>;
        return list.find((j) => j.id === id);
      },
      { timeoutMs: 10_000, what: 'the job in /dead' },
    );
    expect(dead).toMatchObject({ attemptsMade: 3, reason: expect.stringContaining('refused') });
    await http().post(`/dead/${id}/retry`).expect(200, { id, retried: true });
    // Right after the retry it is back in line, not dead: waiting, running, or (its attempt
    // failed again already: 100 ms) waiting for its backoff of 200 ms, then 400 ms.
    expect(['pending', 'leased', 'delayed']).toContain((await getJob(id)).state);
    await http().post(`/dead/${id}/retry`).expect(404);
    await http().post('/dead/nope/retry').expect(404);
  });

  it('cancels a job', async () => {
    const { body } = await http()
      .post('/jobs')
      .send({ data: { to: 'f@example.com' }, delayMs: 60_000 })
      .expect(201);
    const id = (body as { id: string }).id;
    await http().delete(`/jobs/${id}`).expect(200, { id, cancelled: true });
    expect(await getJob(id)).toEqual({ id, state: 'unknown', logs: [] });
    await http().delete(`/jobs/${id}`).expect(404);
  });

  it('counts per queue', async () => {
    const res = await http().get('/queues').expect(200);
    expect(res.body).toMatchObject({
      emails: {
        pending: expect.any(Number),
        delayed: expect.any(Number),
        dead: expect.any(Number),
        workers: 1,
      },
    });
  });

  it('lists its declared schedule, whose next tick waits as a delayed job', async () => {
    const res = await http().get('/schedules').expect(200);
    const list = res.body as Array<{ id: string; nextFireAt: number; lastFireAt: number | null }>;
    expect(list).toEqual([
      expect.objectContaining({
        id: 'digest',
        spec: expect.objectContaining({ every: 60_000 }),
        template: expect.objectContaining({ name: 'digest', data: { to: 'team@example.com' } }),
        ticks: expect.any(Number),
        ended: false,
      }),
    ]);
    const { nextFireAt, lastFireAt } = list[0]!;
    // Upserted at bootstrap, a minute apart: the first tick is within the next minute.
    expect(nextFireAt).toBeGreaterThan(Date.now() - 1_000);
    expect(nextFireAt).toBeLessThanOrEqual(Date.now() + 60_000);
    expect(lastFireAt === null || lastFireAt < nextFireAt).toBe(true);
    expect(await getJob(`digest:${nextFireAt}`)).toMatchObject({
      state: 'delayed',
      name: 'digest',
    });
  });

  it('pauses the queue (health up, saying paused; jobs wait) and resumes it', async () => {
    try {
      await http().post('/queues/emails/pause').expect(200, { queue: 'emails', paused: true });
      const health = await http().get('/health').expect(200);
      expect(health.body).toMatchObject({
        info: { queues: { status: 'up', queues: { emails: { paused: true } } } },
      });
      await http()
        .post('/jobs')
        .send({ name: 'welcome', data: { to: 'p@example.com' }, id: 'while-paused' })
        .expect(201);
      // Added after the pause: no worker may lease it.
      expect((await getJob('while-paused')).state).toBe('pending');
      const pending = await http().get('/queues/emails/jobs?state=pending').expect(200);
      expect((pending.body as Array<{ id: string }>).map((j) => j.id)).toContain('while-paused');
    } finally {
      await http().post('/queues/emails/resume').expect(200, { queue: 'emails', paused: false });
    }
    const res = await http().get('/jobs/while-paused/result?timeoutMs=5000').expect(200);
    expect(res.body).toEqual({
      id: 'while-paused',
      result: { messageId: 'welcome-while-paused', sentAt: expect.any(String) },
    });
    const health = await http().get('/health').expect(200);
    expect(health.body.info.queues.queues.emails.paused).toBe(false);
    await http().post('/queues/nope/pause').expect(404);
  });

  it('lists jobs by state a page at a time; bad input is 400 with every problem', async () => {
    for (const id of ['page-1', 'page-2', 'page-3']) {
      await http()
        .post('/jobs')
        .send({ data: { to: 'g@example.com' }, id, delayMs: 60_000 })
        .expect(201);
    }
    const delayed = async () => {
      const all = await http().get('/queues/emails/jobs?state=delayed&limit=1000').expect(200);
      expect((all.body as Array<{ state: string }>).every((j) => j.state === 'delayed')).toBe(true);
      return (all.body as Array<{ id: string }>).map((j) => j.id);
    };
    const ids = await delayed();
    expect(ids).toEqual(expect.arrayContaining(['page-1', 'page-2', 'page-3']));
    // The digest schedule's ticks come and go (a tick due moves on, the next one is made): a page
    // is compared with the listing only while that stayed the same around it.
    const paged = await waitFor(
      async () => {
        const before = await delayed();
        const page = await http()
          .get('/queues/emails/jobs?state=delayed&offset=1&limit=2')
          .expect(200);
        const after = await delayed();
        if (before.join() !== after.join()) return undefined;
        return { expected: before.slice(1, 3), got: page.body as Array<{ id: string }> };
      },
      { what: 'a page taken while the delayed jobs stayed the same' },
    );
    expect(paged.got.map((j) => j.id)).toEqual(paged.expected);

    const bad = await http()
      .get('/queues/emails/jobs?state=bogus&offset=-1&limit=5000')
      .expect(400);
    const problems = (bad.body as { message: string[] }).message;
    expect(problems).toEqual([
      expect.stringContaining(
        'state must be one of pending, delayed, leased, dead, waiting-children, completed, got "bogus"',
      ),
      expect.stringContaining('offset must be an integer >= 0, got -1'),
      expect.stringContaining('limit must be an integer 1..1000, got 5000'),
    ]);
    const words = await http().get('/queues/emails/jobs?offset=abc').expect(400);
    expect((words.body as { message: string[] }).message).toEqual([
      expect.stringContaining('state must be one of'),
      expect.stringContaining('offset must be an integer >= 0, got "abc"'),
    ]);
    await http().get('/queues/nope/jobs?state=pending').expect(404);
  });

  it('promotes a delayed job, which then runs', async () => {
    await http()
      .post('/jobs')
      .send({ name: 'welcome', data: { to: 'h@example.com' }, id: 'promote-me', delayMs: 60_000 })
      .expect(201);
    expect((await getJob('promote-me')).state).toBe('delayed');
    await http()
      .post('/jobs/promote-me/promote')
      .expect(200, { id: 'promote-me', queue: 'emails', promoted: true });
    const res = await http().get('/jobs/promote-me/result').expect(200);
    expect(res.body).toMatchObject({ result: { messageId: 'welcome-promote-me' } });
    await http().post('/jobs/promote-me/promote').expect(404);
  });

  it('answers GET /jobs/:id/result with 404 for an unknown job and 400 for a bad timeout', async () => {
    await http().get('/jobs/never-added/result?timeoutMs=1000').expect(404);
    const bad = await http().get('/jobs/never-added/result?timeoutMs=soon').expect(400);
    expect((bad.body as { message: string[] }).message).toEqual([
      expect.stringContaining('timeoutMs must be a positive integer'),
    ]);
  });

  it('hears outcomes of every instance in its events listener', async () => {
    const listener = app.get(EmailEventsListener);
    // The jobs of the tests above: completed ones, and the dead-lettered digest.
    await waitFor(() => listener.heard.completed > 0 && listener.heard.dead > 0, {
      what: 'completed and dead events heard',
    });
    expect(listener.heard.failed).toBeGreaterThanOrEqual(3);
  });

  it('health goes down when Redis stops and up when it returns', async () => {
    await redis.stop();
    const started = Date.now();
    const down = await http().get('/health').expect(503);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(down.body).toMatchObject({ status: 'error', error: { queues: { status: 'down' } } });
    await redis.restart();
    await waitFor(async () => (await http().get('/health')).status === 200, {
      timeoutMs: 10_000,
      what: 'health up again',
    });
  });
});
