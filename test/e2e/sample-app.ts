// Boots the sample app itself (sample/main.ts → AppModule) on a private Redis, for a test file
// that drives its endpoints over HTTP (sample.test.ts, sample-health.test.ts,
// sample-queues.test.ts): bootSampleApp() starts both before the file's tests and closes them
// after. `redis` and `app` are set by then (live bindings: read them in the tests).
import { afterAll, beforeAll } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createApp } from '../../sample/main.js';
import { uniqueName } from '../support/keys.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';

export let redis: RedisHandle;
export let app: INestApplication;
export const prefix = uniqueName('sample');
export const http = () => request(app.getHttpServer());
export const getJob = async (id: string) =>
  (await http().get(`/jobs/${id}`).expect(200)).body as Record<string, unknown>;

export function bootSampleApp(): void {
  beforeAll(async () => {
    redis = await startRedis();
    app = await createApp(redis.url, prefix, false);
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    await redis?.dispose();
  });
}
