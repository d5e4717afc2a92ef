import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createApp } from '../../sample/main.js';
import { uniqueName } from '../support/keys.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

// Boots the sample app itself (sample/main.ts → AppModule) on a private Redis and drives every
// endpoint over HTTP.
let redis: RedisHandle;
let app: INestApplication;
const http = () => request(app.getHttpServer());
const getJob = async (id: string) =>
  (await http().get(`/jobs/${id}`).expect(200)).body as Record<string, unknown>;

beforeAll(async () => {
  redis = await startRedis();
  app = await createApp(redis.url, uniqueName('sample'), false);
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
    // Its first attempt takes 100 ms: right after the retry it is back in line, not dead.
    expect(['pending', 'leased']).toContain((await getJob(id)).state);
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
    expect(await getJob(id)).toEqual({ id, state: 'unknown' });
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
