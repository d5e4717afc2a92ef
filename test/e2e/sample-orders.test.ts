import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { createApp } from '../../sample/main.js';
import { uniqueName } from '../support/keys.js';
import { startRedis, type RedisHandle } from '../support/redis-server.js';
import { waitFor } from '../support/wait.js';

// The sample's order flow over HTTP: POST /orders adds an order (in `orders`) that waits for
// its payment (in `payments`) and stock (in `stock`); GET /orders/:id shows how far it is.
let redis: RedisHandle;
let app: INestApplication;
const http = () => request(app.getHttpServer());
const order = async (id: string) =>
  (await http().get(`/orders/${id}`).expect(200)).body as Record<string, unknown>;

beforeAll(async () => {
  redis = await startRedis();
  app = await createApp(redis.url, uniqueName('orders'), false);
  await app.init();
});

afterAll(async () => {
  await app?.close();
  await redis?.dispose();
});

describe('sample: POST /orders, GET /orders/:id', () => {
  it('an order ships once its payment and its items are done, with their results', async () => {
    const res = await http()
      .post('/orders')
      .send({
        customer: 'c-1',
        amountCents: 4200,
        items: [
          { sku: 'mug', qty: 2 },
          { sku: 'tee', qty: 1 },
        ],
      })
      .expect(201);
    const { id, children } = res.body as { id: string; children: string[] };
    expect(children).toEqual([
      expect.stringMatching(/^payments:\d+$/),
      expect.stringMatching(/^stock:\d+$/),
      expect.stringMatching(/^stock:\d+$/),
    ]);
    const done = await waitFor(
      async () => {
        const o = await order(id);
        return o.state === 'completed' ? o : undefined;
      },
      { what: 'the order to ship', timeoutMs: 15_000 },
    );
    expect(done.result).toEqual({
      shipmentId: `sh-${id}`,
      chargeId: `ch-${children[0]!.split(':')[1]}`,
      reserved: expect.arrayContaining([
        { sku: 'mug', reserved: 2 },
        { sku: 'tee', reserved: 1 },
      ]),
    });
  });

  it('a declined payment fails the order with the reason', async () => {
    const res = await http()
      .post('/orders')
      .send({ customer: 'c-2', amountCents: 100, items: [{ sku: 'mug', qty: 1 }], decline: true })
      .expect(201);
    const { id, children } = res.body as { id: string; children: string[] };
    const dead = await waitFor(
      async () => {
        const o = await order(id);
        return o.state === 'dead' ? o : undefined;
      },
      { what: 'the order to fail', timeoutMs: 15_000 },
    );
    expect(dead.deadReason).toBe(`child ${children[0]!.replace(':', '/')} failed: card declined`);
    expect(dead.children).toMatchObject({ pending: 0, failed: 1 });
  });

  it('a bad order is refused (400); an unknown order: 404', async () => {
    await http().post('/orders').send({ customer: 'x', amountCents: 1, items: [] }).expect(400);
    await http().get('/orders/nope').expect(404);
  });
});
