import { Test, TestingModule } from '@nestjs/testing';
import { INestApplication } from '@nestjs/common';
import request from 'supertest';
import { App } from 'supertest/types';
import { AppModule, Mailer } from './../src/app.module';

describe('AppModule (e2e)', () => {
  let app: INestApplication<App>;

  beforeEach(async () => {
    const moduleFixture: TestingModule = await Test.createTestingModule({
      imports: [AppModule],
    }).compile();

    app = moduleFixture.createNestApplication();
    await app.init();
  });

  afterEach(async () => {
    await app.close();
  });

  it('POST /signup queues a welcome email that the processor sends', async () => {
    const sent = new Promise<string>((resolve) => {
      jest.spyOn(app.get(Mailer), 'send').mockImplementation(async (to) => resolve(to));
    });
    const to = `e2e-${Date.now()}@example.com`;
    const res = await request(app.getHttpServer()).post(`/signup?email=${to}`).expect(201);
    expect(res.body).toEqual({ id: `welcome:${to}`, added: true });
    expect(await sent).toBe(to);
  });

  it('GET /health reports the queue and its worker', async () => {
    const res = await request(app.getHttpServer()).get('/health').expect(200);
    expect(res.body.info.queues.queues.emails.workers).toBe(1);
  });
});
