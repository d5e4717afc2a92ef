// The sample app's health over HTTP: its probes, those of a web instance (WORKERS=false) whose
// jobs a worker instance runs, and health while Redis is down.
import { describe, expect, it } from '@jest/globals';
import request from 'supertest';
import { workersFromEnv } from '../../sample/app.module.js';
import { createApp } from '../../sample/main.js';
import { waitFor } from '../support/wait.js';
import { bootSampleApp, getJob, http, prefix, redis } from './sample-app.js';

bootSampleApp();

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
