// The README's Nest quick start and testing story, kept compiling and passing here. Only the
// import paths differ from the README ('nestjs-work-queue' -> '../../src/index.js').
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import {
  Controller,
  Get,
  Injectable,
  Module,
  Post,
  Query,
  type INestApplication,
} from '@nestjs/common';
import { HealthCheck, HealthCheckService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { WorkQueueHealthIndicator, WorkQueueHealthModule } from '../../src/health/index.js';
import {
  getQueueToken,
  InjectQueue,
  Process,
  Processor,
  WorkQueue,
  WorkQueueModule,
  type Job,
} from '../../src/index.js';
import { deleteKeys, testRedisUrl } from '../support/keys.js';
import { Inspector, startNestApp } from '../support/nest-app.js';

// ---------------------------------------------------------------- README: quick start

export interface EmailJob {
  to: string;
}

@Injectable()
export class Mailer {
  async send(to: string, subject: string, opts: { signal: AbortSignal }): Promise<void> {
    void [to, subject, opts]; // a real mailer sends here
  }
}

@Processor('emails', { concurrency: 10 })
export class EmailProcessor {
  constructor(private readonly mailer: Mailer) {}

  @Process('welcome') // jobs added with { name: 'welcome' }
  async welcome(job: Job<EmailJob>) {
    await this.mailer.send(job.data.to, 'Welcome!', { signal: job.signal });
  }

  @Process() // every other job of the queue
  async other(job: Job<EmailJob>) {
    await this.mailer.send(job.data.to, `About ${job.name ?? 'your account'}`, {
      signal: job.signal,
    });
  }
}

@Controller('signup')
export class SignupController {
  constructor(@InjectQueue('emails') private readonly emails: WorkQueue<EmailJob>) {}

  @Post()
  async signUp(@Query('email') to: string) {
    // A caller id dedupes: signing up twice queues one welcome email.
    return this.emails.add({ to }, { name: 'welcome', id: `welcome:${to}` });
  }
}

@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly queues: WorkQueueHealthIndicator,
  ) {}

  @Get()
  @HealthCheck()
  check() {
    return this.health.check([
      () => this.queues.isHealthy('queues', { maxDead: 100, minWorkers: 1 }),
    ]);
  }
}

// In the README: url from process.env.REDIS_URL and no prefix (the default 'wq').
const readmePrefix = `readme-${randomUUID().slice(0, 8)}`;

@Module({
  imports: [
    WorkQueueModule.forRoot({ connection: { url: testRedisUrl() }, prefix: readmePrefix }),
    WorkQueueModule.registerQueue({ name: 'emails', maxAttempts: 5 }),
    TerminusModule,
    WorkQueueHealthModule,
  ],
  controllers: [SignupController, HealthController],
  providers: [EmailProcessor, Mailer],
})
export class AppModule {}

// main.ts:
//   const app = await NestFactory.create(AppModule);
//   app.enableShutdownHooks(); // on SIGTERM, workers finish or release their jobs
//   await app.listen(3000);

// ---------------------------------------------------------------- README: testing story

describe('EmailProcessor (against a real Redis)', () => {
  let app: INestApplication;
  let emails: WorkQueue<EmailJob>;
  const prefix = `test-${randomUUID()}`; // this test's keys only
  const mailer = { send: jest.fn<(...args: unknown[]) => Promise<void>>() };

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [
        WorkQueueModule.forRoot({
          connection: { url: testRedisUrl() }, // README: process.env.REDIS_URL
          prefix,
          logger: false,
          shutdownTimeoutMs: 1_000,
        }),
        WorkQueueModule.registerQueue({
          name: 'emails',
          backoff: { type: 'fixed', delayMs: 10 }, // fast retries in tests
        }),
      ],
      providers: [EmailProcessor, { provide: Mailer, useValue: mailer }],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init(); // starts the workers
    emails = app.get(getQueueToken('emails'));
  });

  afterEach(async () => {
    await app.close(); // drains the workers and closes every connection
    mailer.send.mockReset();
  });

  afterAll(async () => {
    // README: remove the test's keys with any client, e.g. SCAN MATCH `${prefix}:*` + UNLINK.
    const inspector = new Inspector();
    await deleteKeys(inspector.client, `${prefix}:*`);
    await deleteKeys(inspector.client, `${readmePrefix}:*`);
    await inspector.close();
  });

  it('sends the welcome email', async () => {
    const sent = new Promise<unknown[]>((resolve) => {
      mailer.send.mockImplementation(async (...args: unknown[]) => void resolve(args));
    });
    await emails.add({ to: 'a@example.com' }, { name: 'welcome' });
    expect(await sent).toEqual(['a@example.com', 'Welcome!', { signal: expect.any(AbortSignal) }]);
  });

  it('retries when the mailer fails', async () => {
    let calls = 0;
    const sent = new Promise<number>((resolve) => {
      mailer.send.mockImplementation(async () => {
        if (++calls < 3) throw new Error('SMTP down');
        resolve(calls);
      });
    });
    await emails.add({ to: 'b@example.com' }, { name: 'welcome' });
    expect(await sent).toBe(3);
  });
});

// ---------------------------------------------------------------- the quick start, run

describe('README quick start', () => {
  it('queues through the controller, processes, and reports health', async () => {
    const app = await startNestApp({
      imports: [AppModule],
      moduleLogger: { log() {}, warn() {}, error() {} },
    });
    try {
      const mailer = app.get(Mailer);
      const sent = new Promise<string>((resolve) => {
        jest.spyOn(mailer, 'send').mockImplementation(async (to) => void resolve(to));
      });
      const first = await request(app.getHttpServer()).post('/signup?email=c@example.com');
      const again = await request(app.getHttpServer()).post('/signup?email=c@example.com');
      expect(first.status).toBe(201);
      expect(first.body).toEqual({ id: 'welcome:c@example.com', added: true });
      expect([true, false]).toContain(again.body.added); // false unless already processed
      expect(await sent).toBe('c@example.com');
      const health = await request(app.getHttpServer()).get('/health');
      expect(health.status).toBe(200);
      expect(health.body.info.queues.queues.emails.workers).toBe(1);
    } finally {
      await app.close();
    }
  });
});
