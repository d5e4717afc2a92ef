import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createApp } from '../../sample/main.js';
import { getQueueToken, type QueueEvent, type WorkQueue } from '../../src/index.js';
import { parseEntry } from '../../lib/events/parse.js';
import { TENANTS } from '../../sample/tenants.js';
import { uniqueName } from '../support/keys.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

// The sample app's multi-tenant queue (issue 27): POST /tenants/:id/jobs puts a job in the
// tenant's group; GET /queues/tenants/groups lists the groups. The queue is registered with
// `groups: { concurrency: 1, limiter }`: per tenant one job at a time, in order.
let redis: RedisHandle;
let app: INestApplication;
const http = () => request(app.getHttpServer());

beforeAll(async () => {
  redis = await startRedis();
  app = await createApp(redis.url, uniqueName('tenants'), false);
  await app.init();
});

afterAll(async () => {
  await app?.close();
  await redis?.dispose();
});

describe('sample app: tenants', () => {
  it("a big tenant does not hold a small one's jobs; each tenant's jobs run one at a time, in order", async () => {
    const queue = app.get<WorkQueue>(getQueueToken(TENANTS));
    await queue.pause(); // add everything first, then watch the order
    for (let i = 0; i < 30; i++) {
      await http()
        .post('/tenants/big/jobs')
        .send({ data: { item: `b${i}`, workMs: 5 } })
        .expect(201);
    }
    const small = await http()
      .post('/tenants/small/jobs')
      .send({ data: { item: 's0', workMs: 5 } })
      .expect(201);
    expect(small.body).toMatchObject({ added: true, tenant: 'small' });
    const groups = await http().get('/queues/tenants/groups').expect(200);
    expect(groups.body).toEqual([
      { group: 'big', pending: 30, running: 0, paused: false, limited: false },
      { group: 'small', pending: 1, running: 0, paused: false, limited: false },
    ]);
    await queue.resume();
    await waitFor(
      async () => (await queue.counts()).pending + (await queue.counts()).leased === 0,
      {
        timeoutMs: 15_000,
        what: 'every tenant job done',
      },
    );
    // In Redis order: the small tenant's job started among the first two; big's ran one at a
    // time (each completed before the next started), in the order added.
    const log: QueueEvent[] = (
      await (queue.client as import('ioredis').Redis).xrange(queue.keys.eventLog, '-', '+')
    ).flatMap(([id, fields]) => parseEntry(id, fields));
    const starts = log.filter((e) => e.kind === 'active');
    expect(starts.findIndex((e) => e.group === 'small')).toBeLessThan(2);
    let running: string | undefined;
    const order: string[] = [];
    for (const e of log.filter((x) => x.group === 'big')) {
      if (e.kind === 'active') {
        expect(running).toBeUndefined();
        running = e.id;
        order.push(e.id);
      } else if (e.kind === 'completed') running = undefined;
    }
    expect(order).toEqual([...order].sort((a, b) => Number(a) - Number(b)));
    expect(order).toHaveLength(30);
    expect((await http().get('/queues/tenants/groups').expect(200)).body).toEqual([]);
  });

  it('refuses a bad tenant id or body with every reason', async () => {
    const long = 'x'.repeat(300);
    const res = await http()
      .post(`/tenants/${long}/jobs`)
      .send({ data: { item: 'a' } })
      .expect(400);
    expect((res.body as { message: string[] }).message).toEqual([
      'group must be a non-empty string of at most 256 bytes, got 300 bytes',
    ]);
    const bad = await http().post('/tenants/t/jobs').send({ priority: 12 }).expect(400);
    expect((bad.body as { message: string[] }).message).toEqual(
      expect.arrayContaining([
        expect.stringContaining('data'),
        expect.stringContaining('priority'),
      ]),
    );
    await http().get('/queues/tenants/groups?limit=0').expect(400);
  });
});
