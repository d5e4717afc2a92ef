import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { getQueueToken, WorkQueueModule, type Job, type WorkQueue } from 'nestjs-work-queue';
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
    let app: INestApplication;
    let emails: WorkQueue<EmailJob>;

    beforeEach(async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [
          WorkQueueModule.forRoot({
            connection: { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
            prefix: `test-${randomUUID()}`, // this test's keys only
            logger: false,
          }),
          WorkQueueModule.registerQueue({
            name: 'emails',
            backoff: { type: 'fixed', delayMs: 10 },
          }),
        ],
        providers: [EmailProcessor, { provide: Mailer, useValue: mailer }],
      }).compile();
      app = moduleRef.createNestApplication();
      await app.init(); // starts the workers
      emails = app.get(getQueueToken('emails'));
    });

    afterEach(() => app.close()); // drains the workers, closes every connection

    it('retries when the mailer fails', async () => {
      let calls = 0;
      const sent = new Promise<number>((resolve) => {
        send.mockImplementation(async () => {
          if (++calls < 3) throw new Error('SMTP down');
          resolve(calls);
        });
      });
      await emails.add({ to: 'b@example.com' }, { name: 'welcome' });
      expect(await sent).toBe(3);
    });

    it('hands other job names to the catch-all handler', async () => {
      const subject = new Promise<string>((resolve) => {
        send.mockImplementation(async (_to, s) => resolve(s));
      });
      await emails.add({ to: 'c@example.com' }, { name: 'password-reset' });
      expect(await subject).toBe('About password-reset');
    });
  });
});
