import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { getQueueToken, WorkQueueModule, type Job, type WorkQueue } from 'nestjs-work-queue';
import {
  startTestRedis,
  whenIdle,
  WorkQueueTestingModule,
  type TestRedis,
} from 'nestjs-work-queue/testing';
import { EmailProcessor, Mailer, type EmailJob } from './app.module';

describe('EmailProcessor', () => {
  const mailer = new Mailer();
  const send = jest.spyOn(mailer, 'send');
  afterEach(() => send.mockReset());

  // A handler is a plain method: call it with a hand-made job, no Redis needed.
  it('sends the welcome email', async () => {
    send.mockResolvedValue();
    const job = { data: { to: 'a@example.com' }, signal: new AbortController().signal };
    await new EmailProcessor(mailer).welcome(job as Job<EmailJob>);
    expect(send).toHaveBeenCalledWith('a@example.com', 'Welcome!', { signal: job.signal });
  });

  // Against a real Redis, through the module: retries and job names as in production.
  describe('with Redis', () => {
    let redis: TestRedis;
    let app: INestApplication;
    let emails: WorkQueue<EmailJob>;

    // REDIS_URL when set, else a Docker container, else a local redis-server.
    beforeAll(async () => {
      redis = await startTestRedis();
    }, 60_000);
    afterAll(() => redis?.stop());

    beforeEach(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [
          // this app's own prefix (its keys removed on close), retries 10 ms apart
          WorkQueueTestingModule.forRoot({ connection: { url: redis.url } }),
          WorkQueueModule.registerQueue({ name: 'emails' }),
        ],
        providers: [EmailProcessor, { provide: Mailer, useValue: mailer }],
      }).compile();
      app = moduleRef.createNestApplication();
      await app.init(); // starts the workers
      emails = app.get(getQueueToken('emails'));
    });

    afterEach(() => app.close()); // drains the workers, removes the keys, closes connections

    it('retries when the mailer fails', async () => {
      send.mockRejectedValueOnce(new Error('SMTP down')).mockResolvedValue();
      await emails.add({ to: 'b@example.com' }, { name: 'welcome' });
      expect(await whenIdle(emails, { timeoutMs: 4_000 })).toMatchObject({ dead: 0 });
      expect(send).toHaveBeenCalledTimes(2);
    });

    it('hands other job names to the catch-all handler', async () => {
      send.mockResolvedValue();
      await emails.add({ to: 'c@example.com' }, { name: 'password-reset' });
      await whenIdle(emails, { timeoutMs: 4_000 });
      expect(send).toHaveBeenCalledWith('c@example.com', 'About password-reset', {
        signal: expect.anything(),
      });
    });
  });
});
